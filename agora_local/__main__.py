"""`python -m agora_local` (`make run`)."""

import sys

from agora_local.run import exit_now, main

exit_now(main(sys.argv[1:]))
