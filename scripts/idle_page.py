"""What an open page of the app costs its browser at rest: Chromium's CPU, and the animation frames the page asks for.

    python -m scripts.idle_page                                  # starts this checkout's app.py, measures its page
    python -m scripts.idle_page --url http://127.0.0.1:7871/ --url http://127.0.0.1:7870/ --repeats 2

Each page opens in headless Chromium at 1366×768 (a new page per measurement, the URLs taken in turn so that the
machine's drift touches them alike), waits `--settle` seconds after its Run button shows, then reads the CPU time of
every Chromium process and the page's requestAnimationFrame calls over `--window` seconds. Prints one JSON object per
measurement. An app before assets/orphan-timer.js asks for 60 frames a second at rest (Gradio 6.31's orphaned
loading timer); docs/results.md reports both.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import psutil

from tests.browser import FRAME_COUNTER  # the tests count the same frames


def chromium_cpu_seconds() -> float:
    total = 0.0
    for process in psutil.process_iter(["name"]):
        try:
            if "chrom" in (process.info["name"] or ""):
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            pass
    return total


def measure(browser, url: str, settle_s: float, window_s: float) -> dict:
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        page.add_init_script(FRAME_COUNTER)
        page.goto(url)
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=120_000)
        time.sleep(settle_s)
        cpu, frames = chromium_cpu_seconds(), page.evaluate("window.__frames")
        time.sleep(window_s)
        cpu, frames = chromium_cpu_seconds() - cpu, page.evaluate("window.__frames") - frames
        return {"url": url, "chromium_cores": round(cpu / window_s, 3), "frames_per_s": round(frames / window_s, 1)}
    finally:
        page.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.idle_page", description=__doc__.split("\n")[0])
    parser.add_argument("--url", action="append", help="a running app's page (repeatable); default: start app.py")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after load before measuring")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    server = None
    urls = args.url
    if not urls:
        from specviz.bench.loadtest import start_server

        url, server = start_server(Path(tempfile.gettempdir()) / "idle-page-app.log", env={"SPECVIZ_WARM_UP": "0"})
        urls = [url]
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox",
                                                                                  "--disable-gpu"])
            for _ in range(args.repeats):
                for url in urls:
                    print(json.dumps(measure(browser, url, args.settle, args.window)), flush=True)
            browser.close()
    finally:
        if server is not None:
            server.terminate()


if __name__ == "__main__":
    main()
