# A candidate that kills every process it may signal: its supervisor and the warm worker too.
import os
import signal

os.kill(-1, signal.SIGKILL)
