"""Load test: a class of students using one server at once, pressing Run within the same minute.

    python -m specviz loadtest [--url URL --pid PID] [--sessions 30] [--window 60] [--runs 1] [--pair PAIR]

Starts `python app.py` on a free port of 127.0.0.1 (or drives --url), with a teacher key of its own, then:
1. One session alone presses Run twice (the first loads the model): its time to the first row, and the server's
   memory after it, a single session's.
2. The class: --sessions gradio_client sessions open the page, then each presses Run at its own moment within
   --window seconds (0: all at once), with its own prompt and seed, on the page's default settings (--pair changes
   the pair as the menu does). For each press: when it first sees its place in Gradio's queue, when its first row
   arrives, and whether the trace and text it gets are its own (anything else is cross-talk). Once the last
   student has pressed, the teacher presses Step and then Run on the teacher's lane (--teacher-key with --url).
3. The server's memory after the burst, against the single session's; optionally --memory-runs runs in a row.

Prints one JSON summary, then the goals (0 errors, 0 cross-talk, every queue place seen within 1 s, memory within
10% of a single session's, the teacher ahead of the class) with whether each is met, on stderr. Exits 1 when a
measured goal is not met, 2 on bad arguments or a server that does not start.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from specviz import paths
from specviz.app.request import DRAFT_MODEL, DRAFTERS, LOOKUP_THEN_DRAFT, PAIRS, RunRequest, pair_settings
from specviz.bench import loadtest_report as report
from specviz.bench.loadtest_burst import Press, class_burst, look
from specviz.config import OFFLINE_MODEL

TOPICS = ["rivers", "volcanoes", "honeybees", "lighthouses", "glaciers", "comets", "owls", "tides", "bridges", "maple trees"]
WARM_RUNS = 5  # --memory-runs: memory is read after these, once caches and pools have settled
SETTLE_S = 3.0  # after the burst, before memory is read: the last streams close
CLIENT_TIMEOUT_S = 60  # gradio_client's HTTP requests (5 s by default: a busy 2-core server can take longer to answer)
ALONE_SEED, TEACHER_SEED, MEMORY_SEED = 900_000, 800_000, 700_000  # students' seeds are 1000 × session + run


def start_server(log_path: Path, env: dict | None = None) -> tuple[str, subprocess.Popen]:
    """`python app.py` on a free port of 127.0.0.1; returns (url, process) once it answers. `env` adds to the
    environment; a name set to None there is removed (to start the app with no GRADIO_SERVER_NAME, say)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1",
           "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
    env = {name: value for name, value in env.items() if value is not None}
    root = paths.ROOT
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


def session(url: str):
    """A gradio_client session: one student's page (its own session, so its own gr.State)."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": CLIENT_TIMEOUT_S})


def is_own(result, prompt: str, seed: int) -> bool:
    """Whether a /run result is this run's own: the trace offered for download carries its prompt and seed, the
    text shown is that trace's, and the rows are that trace's rounds."""
    trace = json.loads(Path(result[-1]).read_text(encoding="utf-8"))
    return (trace["prompt"] == prompt and trace["config"]["seed"] == seed and result[1] == html.escape(trace["text"])
            and result[0].count('<div class="sv-row">') == len(trace["rounds"]))


def one_run(client, request: RunRequest, api_name: str = "/run") -> dict:
    """One Run click (or `api_name`'s: the teacher's Run or Step), waited for; returns its latency, its time to the
    first row, and whether it is its own (a Step's result ends with its session, not a trace file: not checked)."""
    press = Press("one", request.prompt, request.seed, pressed=time.monotonic())
    job = client.submit(*request.api_args(), api_name=api_name)
    while not job.done():
        look(job, press, time.monotonic())
        time.sleep(0.02)
    result = job.result()
    look(job, press, time.monotonic())
    return {"seconds": time.monotonic() - press.pressed, "first_row_s": press.first_row_s,
            "own": None if api_name.endswith("step") else is_own(result, request.prompt, request.seed)}


def page_request(client, pair: str | None, drafter: str | None, max_new_tokens: int | None,
                 backend: str | None = None):
    """What a student's page sends when they press Run untouched: the /run endpoint's defaults (the widgets'
    initial values, the pair the server offers first), with the pair's drafter, γ, draft stop and adaptive γ when
    `pair` or `backend` chooses another (as the pair menu and the backend radio set them). Returns a function
    (who, seed) -> RunRequest with a prompt of that person's own and that seed."""
    parameters = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/run"]["parameters"]
    base = RunRequest(**{parameter["parameter_name"]: parameter.get("parameter_default") for parameter in parameters})
    if pair is not None or backend is not None:
        pair, backend = pair or base.pair, backend or base.backend
        settings = {name: value for name, value in pair_settings(pair, backend=backend).items()
                    if name in RunRequest.field_names()}  # draft_vocab is the pair's own, not a field of the page
        base = dataclasses.replace(base, pair=pair, backend=backend, **settings,
                                   drafter=LOOKUP_THEN_DRAFT if PAIRS[pair][0] == OFFLINE_MODEL else DRAFT_MODEL)
    base = dataclasses.replace(base, drafter=drafter or base.drafter, max_new_tokens=max_new_tokens or base.max_new_tokens)

    def request_for(who: str, seed: int) -> RunRequest:
        topic = TOPICS[seed % len(TOPICS)]
        return dataclasses.replace(base, prompt=f"{who}: name three facts about {topic}.", seed=seed)
    return request_for


def single_session(url: str, process, request_for) -> dict:
    """One session alone, before the class: two Runs (the first loads the model); the second's time to the first
    row, and the server's memory after them."""
    client, errors, first_row = session(url), [], None
    for run in range(2):
        try:
            first_row = one_run(client, request_for(f"Alone, run {run}", ALONE_SEED + run))["first_row_s"]
        except Exception as error:
            errors.append(f"single session run {run}: {type(error).__name__}: {str(error)[:200]}")
    return {"first_row_s": first_row, "rss": _tree_rss(process) if process else None, "errors": errors}


def burst(url: str, process, request_for, sessions: int, window_s: float, runs: int, teacher_key: str | None) -> dict:
    """The class's burst (loadtest_burst.class_burst) and the server's memory after it and at its peak."""
    clients = [session(url) for _ in range(sessions)]  # every student has the page open
    teacher, alone = None, {}
    if teacher_key:
        teacher_client = session(url)
        teacher_client.predict(teacher_key, api_name="/teacher_unlock")
        teacher = (teacher_client, request_for("Teacher", TEACHER_SEED))
        # with nobody else running: the teacher's lane against a student's Run alone (single_session's)
        alone = {kind: one_run(teacher_client, request_for("Teacher alone", TEACHER_SEED), f"/teacher_{kind}")["first_row_s"]
                 for kind in ("step", "run")}
    peak, done = [0], threading.Event()

    def sample_memory() -> None:
        while process is not None and not done.wait(0.5):
            peak[0] = max(peak[0], _tree_rss(process))

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    result = class_burst(clients, request_for, window_s, runs, is_own, teacher)
    result["teacher_alone"] = alone
    done.set()
    if process is not None:  # read while every page is still open, as a class keeps its tabs
        time.sleep(SETTLE_S)
        result["rss_after"], result["rss_peak"] = _tree_rss(process), max(peak[0], _tree_rss(process))
    for client in clients:
        client.close()
    return result


def memory_runs(url: str, process, request_for, runs: int) -> dict:
    """`runs` runs in a row from one session; the server's RSS after WARM_RUNS of them and after the last."""
    client = session(url)
    rss, errors, crosstalk = {}, [], 0
    for run in range(runs):
        try:
            crosstalk += not one_run(client, request_for(f"Memory run {run}", MEMORY_SEED + run))["own"]
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


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(prog="python -m specviz loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="drive this running server instead of starting app.py")
    parser.add_argument("--pid", type=int, help="with --url: the server's process id, to read its memory")
    parser.add_argument("--teacher-key", help="with --url: the server's SPECVIZ_TEACHER_KEY, to time the teacher's "
                                              "lane (a server this starts gets a key of its own)")
    parser.add_argument("--sessions", type=int, default=30, help="students, each with the page open (default 30)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds within which they all press Run (default "
                                                                   "60; 0: all at once)")
    parser.add_argument("--runs", type=int, default=1, help="Runs each student presses, one after another (default 1)")
    parser.add_argument("--pair", choices=[pair for pair, (target, _) in PAIRS.items() if target], metavar="PAIR",
                        help="a pair of the menu, by its full name, set as the menu sets it (default: the page's); "
                             "e.g. 'Offline: Qwen2.5-Coder-1.5B-Instruct ← Qwen2.5-Coder-0.5B-Instruct'")
    parser.add_argument("--drafter", choices=DRAFTERS, help="the drafter (default: the page's for the pair)")
    parser.add_argument("--max-new-tokens", type=int, help="per run (default: the page's)")
    parser.add_argument("--memory-runs", type=int, default=0, help="then this many runs in a row, for the memory "
                                                                   "growth (0: none)")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.runs < 1 or args.memory_runs < 0 or args.window < 0 or \
            not 1 <= (args.max_new_tokens or 1) <= 512:
        parser.exit(2, "loadtest: --sessions and --runs must be at least 1, --window and --memory-runs at least 0, "
                       "--max-new-tokens 1..512\n")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exit_:  # argparse's own refusals, and ours: 2
        return int(exit_.code or 0)
    server, teacher_key = None, args.teacher_key
    try:
        if args.url:
            url, process = args.url, _process(args.pid)
        else:
            teacher_key = secrets.token_urlsafe(12)
            server_log = Path(os.environ.get("TMPDIR", "/tmp")) / "specviz-loadtest-app.log"
            url, server = start_server(server_log, env={"SPECVIZ_TEACHER_KEY": teacher_key})
            process = _process(server.pid)
        request_for = page_request(session(url), args.pair, args.drafter, args.max_new_tokens)
        single = single_session(url, process, request_for)
        class_result = burst(url, process, request_for, args.sessions, args.window, args.runs, teacher_key)
        memory = memory_runs(url, process, request_for, args.memory_runs) if args.memory_runs else None
    except (RuntimeError, OSError) as error:
        print(f"loadtest: {error}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    summary = report.summarize(args.sessions, args.runs, class_result, single, memory)
    print(json.dumps(summary, indent=2))
    print(report.goals_table(report.goals(summary)), file=sys.stderr)
    return 1 if report.failed(summary) else 0


if __name__ == "__main__":
    sys.exit(main())
