# A correct candidate that fails to load if anything of an earlier job in its warm worker is
# still there: it gives the earlier job's left-behind process time to write, then looks for its
# files, its process and any folder beside its own job folder.
import os
import time

time.sleep(1)
found = [p for p in ("/tmp/kforge_planted", "/dev/shm/kforge_planted", "/tmp/kforge_planted_late")
         if os.path.exists(p)]
beside = sorted(set(os.listdir(os.path.dirname(os.getcwd()))) - {os.path.basename(os.getcwd())})
if beside:
    found.append("beside the job folder: %s" % beside)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"kforge_planted_daemon" in f.read():
                    found.append("process %s" % pid)
        except OSError:
            pass
if found:
    raise RuntimeError("traces of an earlier job: %s" % found)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.py")).read())
