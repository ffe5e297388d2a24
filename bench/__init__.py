"""`make bench`: how fast and how lean Agora is, each figure against a reference taken in the same
run on the same machine. Benchmarks measure; tests never time."""
