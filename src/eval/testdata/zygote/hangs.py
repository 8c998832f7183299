# A candidate that never finishes loading.
import time

time.sleep(3600)
