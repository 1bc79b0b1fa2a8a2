"""Load test: many people using one server at once, as in a classroom.

    python -m specviz.bench.loadtest [--url URL] [--sessions 8] [--runs 3] [--memory-runs 50]

Starts `python app.py` on a free port of 127.0.0.1 (or drives --url), then:
1. N gradio_client sessions at once, each doing several runs with its own prompts and seeds. Every run's trace
   (the JSON the app offers for download) must carry exactly that session's prompt and seed, and the text shown
   must be that trace's text: anything else is cross-talk.
2. Then one session runs --memory-runs times in a row, and the server's resident memory after the first few
   (warm) runs is compared with the memory after the last.

Prints one JSON object: sessions, runs, errors, crosstalk, p50_s, p95_s, rss_growth, and details. Exits 1 when
anything errored, crossed or went unserved.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from specviz.app.request import OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest

TOPICS = ["rivers", "volcanoes", "honeybees", "lighthouses", "glaciers", "comets", "owls", "tides", "bridges", "maple trees"]
WARM_RUNS = 5  # memory is read after these, once caches and pools have settled


def start_server(log_path: Path, env: dict | None = None) -> tuple[str, subprocess.Popen]:
    """`python app.py` on a free port of 127.0.0.1; returns (url, process) once it answers. `env` adds to the
    environment; a name set to None there is removed (to start the app with no GRADIO_SERVER_NAME, say)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1",
           "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
    env = {name: value for name, value in env.items() if value is not None}
    root = Path(__file__).resolve().parents[2]
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 180
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return url, process
        except OSError:
            if process.poll() is not None or time.time() > deadline:
                process.kill()
                raise RuntimeError(f"app.py did not start; its log: {log_path}") from None
            time.sleep(0.5)


def one_run(client, prompt: str, seed: int, max_new_tokens: int, temperature: float) -> dict:
    """One Run click; returns its latency and whether what came back is this run's own."""
    started = time.perf_counter()
    request = RunRequest(pair=OFFLINE_PAIR, drafter=PROMPT_LOOKUP, prompt=prompt, max_new_tokens=max_new_tokens,
                         temperature=temperature, seed=seed)
    result = client.predict(*request.api_args(), api_name="/run")
    seconds = time.perf_counter() - started
    trace = json.loads(Path(result[-1]).read_text(encoding="utf-8"))
    own = (trace["prompt"] == prompt and trace["config"]["seed"] == seed and result[1] == html.escape(trace["text"])
           and result[0].count('<div class="sv-row">') == len(trace["rounds"]))
    return {"seconds": seconds, "own": own, "tokens": len(trace["token_ids"])}


def concurrent_sessions(url: str, sessions: int, runs: int, max_new_tokens: int) -> dict:
    from gradio_client import Client

    results, errors, lock = [], [], threading.Lock()
    start = threading.Barrier(sessions)

    def session(number: int) -> None:
        try:
            client = Client(url, verbose=False)
        except Exception as error:  # the server refused a session: counted, not raised
            with lock:
                errors.append(f"session {number}: {type(error).__name__}: {error}")
            return
        start.wait()
        for run in range(runs):
            topic = TOPICS[(number + run) % len(TOPICS)]
            prompt = f"Session {number}, run {run}: name three facts about {topic}."
            try:
                outcome = one_run(client, prompt, seed=1000 * number + run, max_new_tokens=max_new_tokens,
                                  temperature=0.8 if run % 2 else 0.0)
            except Exception as error:
                with lock:
                    errors.append(f"session {number} run {run}: {type(error).__name__}: {str(error)[:200]}")
                continue
            with lock:
                results.append(outcome)

    threads = [threading.Thread(target=session, args=(number,)) for number in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"results": results, "errors": errors}


def memory_runs(url: str, pid: int | None, runs: int, max_new_tokens: int) -> dict:
    """`runs` runs in a row from one session; the server's RSS after WARM_RUNS of them and after the last."""
    from gradio_client import Client

    process = _process(pid)
    client = Client(url, verbose=False)
    rss, errors, crosstalk = {}, [], 0
    for run in range(runs):
        prompt = f"Memory run {run}: describe {TOPICS[run % len(TOPICS)]} in two sentences."
        try:
            crosstalk += not one_run(client, prompt, seed=run, max_new_tokens=max_new_tokens, temperature=0.0)["own"]
        except Exception as error:
            errors.append(f"memory run {run}: {type(error).__name__}: {str(error)[:200]}")
        if process is not None and run + 1 in (min(WARM_RUNS, runs), runs):
            rss[run + 1] = _tree_rss(process)
    growth = None
    if len(rss) == 2:
        (_, warm), (_, last) = sorted(rss.items())
        growth = (last - warm) / warm
    return {"rss_mb": {str(k): round(v / 2**20, 1) for k, v in rss.items()}, "growth": growth, "errors": errors,
            "crosstalk": crosstalk}


def _process(pid: int | None):
    if pid is None:
        return None
    import psutil  # a dependency of accelerate

    return psutil.Process(pid)


def _tree_rss(process) -> int:
    return process.memory_info().rss + sum(child.memory_info().rss for child in process.children(recursive=True))


def summarize(sessions: int, runs: int, concurrent: dict, memory: dict) -> dict:
    seconds = sorted(result["seconds"] for result in concurrent["results"])
    errors = concurrent["errors"] + memory["errors"]
    crosstalk = sum(not result["own"] for result in concurrent["results"]) + memory["crosstalk"]
    return {
        "sessions": sessions,
        "runs": len(concurrent["results"]),
        "runs_expected": sessions * runs,
        "errors": len(errors),
        "crosstalk": crosstalk,
        "p50_s": round(statistics.median(seconds), 2) if seconds else None,
        "p95_s": round(seconds[max(0, round(0.95 * len(seconds)) - 1)], 2) if seconds else None,
        "rss_growth": None if memory["growth"] is None else round(memory["growth"], 4),
        "memory_runs": memory["rss_mb"],
        "error_messages": errors[:10],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="drive this running server instead of starting app.py")
    parser.add_argument("--pid", type=int, help="with --url: the server's process id, to read its memory")
    parser.add_argument("--sessions", type=int, default=8, help="concurrent sessions")
    parser.add_argument("--runs", type=int, default=3, help="runs per session")
    parser.add_argument("--memory-runs", type=int, default=50, help="consecutive runs for the memory growth")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.runs < 1 or args.memory_runs < 0 or not 1 <= args.max_new_tokens <= 512:
        print("loadtest: --sessions and --runs must be at least 1, --max-new-tokens 1..512", file=sys.stderr)
        return 2
    process = None
    try:
        if args.url:
            url, pid = args.url, args.pid
        else:
            url, process = start_server(Path(os.environ.get("TMPDIR", "/tmp")) / "specviz-loadtest-app.log")
            pid = process.pid
        concurrent = concurrent_sessions(url, args.sessions, args.runs, args.max_new_tokens)
        memory = memory_runs(url, pid, args.memory_runs, args.max_new_tokens) if args.memory_runs else \
            {"rss_mb": {}, "growth": None, "errors": [], "crosstalk": 0}
    except (RuntimeError, OSError) as error:
        print(f"loadtest: {error}", file=sys.stderr)
        return 2
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    summary = summarize(args.sessions, args.runs, concurrent, memory)
    print(json.dumps(summary, indent=2))
    failed = summary["errors"] or summary["crosstalk"] or summary["runs"] != summary["runs_expected"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
