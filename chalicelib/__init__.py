"""Agora: the administration API of a community platform (everything Lambda runs)."""
