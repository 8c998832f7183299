# A correct candidate that tries to reach the job after it in the same warm worker: a file in
# /tmp and in /dev/shm, a folder beside its own job folder (the zygote's folder), and a process
# that left its group and session and writes another file into /tmp every 0.2 s for 30 s
# (longer than a warm worker waits for a job's processes to end).
import os
import subprocess
import sys

for path in ("/tmp/kforge_planted", "/dev/shm/kforge_planted"):
    with open(path, "w") as f:
        f.write("planted")
os.makedirs(os.path.join(os.path.dirname(os.getcwd()), "job-planted"), exist_ok=True)
subprocess.Popen([sys.executable, "-c",
                  "import time\nfor i in range(150):\n    open('/tmp/kforge_planted_late', 'w').write('late')\n    time.sleep(0.2)",
                  "kforge_planted_daemon"],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, close_fds=True)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.py")).read())
