"""How much the app adds to a run: drawing (in process) and streaming (through the launched server).

    python -m specviz.bench.app_overhead [--tokens 128] [--repeats 3]

1. In process: the engine alone against the app's `run` callback (rows every round, plots throttled),
   on the same pipeline, config and prompt, alternating, median of the repeats.
2. Through the server: `python app.py` on a free port, driven by gradio_client; time to the first streamed
   row (cold: the click that loads the model; warm: later clicks) and the whole streamed run, against the engine
   alone in this process, alternating one of each so that both see the same machine. The engine's own time inside
   the server (from the downloaded trace) shows how much of the overhead is contention for the cores.
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
from dataclasses import asdict
from pathlib import Path

from specviz import paths
from specviz.decoding.pipeline import build_pipeline

PROMPT = "Write a long story about a dragon who learns to paint. Use many details."


def _request(tokens: int):
    """The run both measurements time: the offline target with prompt lookup, greedy."""
    from specviz.app.request import OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest

    return RunRequest(pair=OFFLINE_PAIR, drafter=PROMPT_LOOKUP, prompt=PROMPT, max_new_tokens=tokens)


def in_process(tokens: int, repeats: int) -> dict:
    from specviz.app import live, worker
    from specviz.app.callbacks import make_config
    from specviz.decoding import engine

    config = make_config(_request(tokens))
    pipeline = worker.call(build_pipeline, config)  # all model work on the app's model thread, as in the app
    worker.call(engine.run_speculative, pipeline, PROMPT, config)  # warm-up
    engine_s, app_s = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        trace = worker.call(engine.run_speculative, pipeline, PROMPT, config)
        engine_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in live.run(**asdict(_request(tokens))):
            pass
        app_s.append(time.perf_counter() - started)
    engine_median, app_median = statistics.median(engine_s), statistics.median(app_s)
    return {"tokens": len(trace.token_ids), "rounds": len(trace.rounds), "engine_s": engine_median,
            "app_callback_s": app_median, "drawing_overhead": app_median / engine_median - 1}


def through_server(tokens: int, repeats: int) -> dict:
    from gradio_client import Client

    from specviz.app import worker
    from specviz.app.callbacks import make_config
    from specviz.decoding import engine
    from specviz.trace import Trace

    config = make_config(_request(tokens))
    pipeline = worker.call(build_pipeline, config)  # all model work on the app's model thread, as in the app
    worker.call(engine.run_speculative, pipeline, PROMPT, config)  # warm-up
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False"}
    root = paths.ROOT
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
        firsts, streamed, engine_here, engine_there, updates = [], [], [], [], []
        for attempt in range(repeats + 1):  # the first call loads the model in the server
            started = time.perf_counter()
            job = client.submit(*_request(tokens).api_args(), api_name="/run")
            first = _first_output(job, started)
            outputs = job.result()
            count = len(job.outputs())
            firsts.append(first)
            if attempt == 0:
                continue
            streamed.append(time.perf_counter() - started)
            engine_there.append(Trace.from_json(Path(outputs[-1]).read_text(encoding="utf-8")).wall_ms / 1e3)
            updates.append(count)
            started = time.perf_counter()
            worker.call(engine.run_speculative, pipeline, PROMPT, config)
            engine_here.append(time.perf_counter() - started)
        median = statistics.median
        return {"first_row_cold_s": firsts[0], "first_row_warm_s": median(firsts[1:]), "updates": median(updates),
                "engine_alone_s": median(engine_here), "engine_in_server_s": median(engine_there),
                "streamed_total_s": median(streamed),
                "streaming_overhead": median(s / e for s, e in zip(streamed, engine_here)) - 1}
    finally:
        server.terminate()
        server.wait(timeout=20)


def _first_output(job, started: float) -> float:
    """Seconds from `started` to the job's first streamed output, checked every 20 ms. (Iterating a Job polls every
    millisecond until it ends, which would steal part of a core from the server and inflate the overhead.)"""
    while not job.outputs() and not job.done():
        time.sleep(0.02)
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.app_overhead")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    result = in_process(args.tokens, args.repeats)
    result.update(through_server(args.tokens, args.repeats))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
