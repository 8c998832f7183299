#!/usr/bin/env python3
"""Opens a kforge report page in headless Chromium and checks it as a reader would see it.

    report_browser_check.py CHROMIUM PAGE.html SCREENSHOT.png CHART[,CHART...]
                            [--dom-contains TEXT]... [--dom-lacks TEXT]...

Passes (exit 0) when the page loaded without a single console message (errors, CSP
violations, uncaught exceptions: a report logs nothing), its script marked <body
data-charts-ready="yes"> (Chart.js ran and every chart drew at least one point) and each chart
named drew points (data-charts="speedup:7 roofline:7"), and the document Chromium built holds
each --dom-contains text and no --dom-lacks text (hostile text stays text: `&lt;/script&gt;` in
a <pre>, no <img> element); then writes a screenshot. Fails (exit 1)
naming each problem otherwise. Chromium runs as root here, so without its sandbox, with a
profile in a fresh temporary folder.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def chromium(binary, profile, args, page):
    # A fresh profile per run: a second Chromium on a profile whose first has not quite exited
    # hands its page to that one and can wait for it.
    profile = tempfile.mkdtemp(dir=profile)
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile, "--hide-scrollbars", "--virtual-time-budget=15000"]
    return subprocess.run(cmd + args + ["file://" + os.path.abspath(page)], capture_output=True,
                          text=True, timeout=180)  # a hang fails with TimeoutExpired, before CTest's limit


def main():
    parser = argparse.ArgumentParser()
    for name in ("chromium", "page", "screenshot", "charts"):
        parser.add_argument(name)
    parser.add_argument("--dom-contains", action="append", default=[])
    parser.add_argument("--dom-lacks", action="append", default=[])
    args = parser.parse_args()
    binary, page, screenshot, charts = args.chromium, args.page, args.screenshot, args.charts.split(",")
    fails = []
    with tempfile.TemporaryDirectory(prefix="kforge-chromium-") as profile:
        loaded = chromium(binary, profile, ["--enable-logging=stderr", "--v=0", "--dump-dom"], page)
        console = re.findall(r":CONSOLE[^\]]*\] (.*)", loaded.stderr)
        for line in console:
            fails.append("console: " + line)
        body = re.search(r"<body([^>]*)>", loaded.stdout)
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1))) if body else {}
        if not body:
            fails.append("no <body> in the page Chromium loaded (exit %d): %s" % (loaded.returncode, loaded.stderr[-500:]))
        drawn = dict(item.split(":") for item in attrs.get("data-charts", "").split() if ":" in item)
        if attrs.get("data-charts-ready") != "yes":
            fails.append("data-charts-ready is %r, not 'yes' (charts drew: %r)" % (attrs.get("data-charts-ready"), attrs.get("data-charts")))
        for name in charts:
            if int(drawn.get(name, "0")) <= 0:
                fails.append("chart %s drew no point (data-charts=%r)" % (name, attrs.get("data-charts")))
        for text in args.dom_contains:
            if text not in loaded.stdout:
                fails.append("the page lacks %r" % text)
        for text in args.dom_lacks:
            if text in loaded.stdout:
                fails.append("the page holds %r" % text)
        shot = chromium(binary, profile, ["--window-size=1280,2000", "--screenshot=" + os.path.abspath(screenshot)], page)
        if not os.path.exists(screenshot) or os.path.getsize(screenshot) == 0:
            fails.append("no screenshot written (exit %d): %s" % (shot.returncode, shot.stderr[-500:]))
    for f in fails:
        print("FAIL: %s: %s" % (page, f))
    if not fails:
        print("ok: %s: no console message; charts %s; screenshot %s" % (page, attrs.get("data-charts"), screenshot))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
