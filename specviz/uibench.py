"""How much the app adds to a run: drawing (in process) and streaming (through the launched server).

    python -m specviz.uibench [--tokens 128] [--repeats 3]

1. In process: the engine alone against the app's `run` callback (rows every round, plots throttled),
   on the same pipeline, config and prompt, alternating, median of the repeats.
2. Through the server: `python app.py` on a free port, driven by gradio_client; time to the first streamed
   row (model already loaded) and the whole streamed run, against the engine alone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PROMPT = "Write a long story about a dragon who learns to paint. Use many details."


def _controls(tokens: int):
    from . import ui

    return [list(ui.PAIRS)[0], "", "", ui.PROMPT_LOOKUP, PROMPT, 4, tokens, 0, 0, 1, 0, False]


def in_process(tokens: int, repeats: int) -> dict:
    from . import engine, ui

    config = ui.make_config(*_controls(tokens)[:11])
    pipeline = engine.build_pipeline(config)
    engine.run_speculative(pipeline, PROMPT, config)  # warm-up
    engine_s, app_s = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        trace = engine.run_speculative(pipeline, PROMPT, config)
        engine_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in ui.run(*_controls(tokens)):
            pass
        app_s.append(time.perf_counter() - started)
    engine_median, app_median = statistics.median(engine_s), statistics.median(app_s)
    return {"tokens": len(trace.token_ids), "rounds": len(trace.rounds), "engine_s": engine_median,
            "app_callback_s": app_median, "drawing_overhead": app_median / engine_median - 1}


def through_server(tokens: int, repeats: int, engine_s: float) -> dict:
    from gradio_client import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False"}
    root = Path(__file__).resolve().parent.parent
    server = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(240):
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        client = Client(url, verbose=False)
        timings = []
        for attempt in range(repeats + 1):  # the first call loads the model in the server
            started = time.perf_counter()
            job = client.submit(*_controls(tokens), api_name="/run")
            first = None
            for _ in job:
                first = first or time.perf_counter() - started
            job.result()
            timings.append((first, time.perf_counter() - started))
        cold_first, cold_total = timings[0]
        warm_first = statistics.median(t[0] for t in timings[1:])
        warm_total = statistics.median(t[1] for t in timings[1:])
        return {"first_row_cold_s": cold_first, "first_row_warm_s": warm_first, "streamed_total_s": warm_total,
                "streaming_overhead": warm_total / engine_s - 1}
    finally:
        server.terminate()
        server.wait(timeout=20)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.uibench")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    result = in_process(args.tokens, args.repeats)
    result.update(through_server(args.tokens, args.repeats, result["engine_s"]))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
