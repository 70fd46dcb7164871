"""python3 -m taskq_console: the taskq-console command."""
import sys

from .cli import main

sys.exit(main())
