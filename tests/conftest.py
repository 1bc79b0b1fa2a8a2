import itertools
import os
import sys
from pathlib import Path

import pytest
import torch

# Keep compiled modules and pytest's assertion-rewritten tests in __pycache__ (git ignores it), even where the
# environment says PYTHONDONTWRITEBYTECODE: rewriting 140 test modules and compiling the package anew took a quarter
# of the fast tier's collection. Python and pytest check each cached file against its source before using it.
sys.dont_write_bytecode = False

# A test that uses one of these loads the real offline model (or starts the app): it belongs to the slow tier.
SLOW_FIXTURES = {"offline_target", "tiny_draft_folder", "app_server", "app_url"}

# The tests run tiny tensors and tiny models. With two OpenMP threads on a two-core machine, every matmul waits for
# a second thread whenever another process holds a core: a test of tiny Qwen2 models took 50 s instead of 2. One
# thread for the session (the app and `python -m specviz`, in their own processes, size theirs: models/threads.py).
torch.set_num_threads(1)


# Tests that share one pytest-xdist worker (.ci/run runs the suite with `-n auto`) say so in their file:
# `pytestmark = pytest.mark.xdist_group(NAME)`. A worker that runs a group with the launched app starts one
# `python app.py` for all of it (and one Chromium for "browser"); two groups start the app, so that neither is one long
# line of tests the other worker cannot share; the Qwen2.5-Coder pair (10 GB) is loaded by "qwen-pair" only. Every
# other file runs whole in one worker, its module fixtures built once.
SERVER_GROUPS = {"browser", "app-clients"}  # the groups whose worker starts the app
SERVER_FIXTURES = {"app_server", "app_url"}  # those that start `python app.py`
BROWSER_FIXTURES = {"page", "chromium"}  # those that start Chromium too


def shared_worker_groups(folder: Path = Path(__file__).parent) -> dict[str, list[str]]:
    """{group: its files, as test ids begin}, read from each test file's module-level xdist_group marker (the
    scheduler runs in pytest-xdist's controller, which collects no tests, so it reads the files)."""
    import ast

    groups: dict[str, list[str]] = {}
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "pytestmark" for target in node.targets):
                for call in ast.walk(node.value):
                    if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "xdist_group":
                        groups.setdefault(call.args[0].value, []).append(f"{folder.name}/{path.name}")
    return groups


def cpu_share() -> int:
    """The CPUs this test process may keep busy: all it may use, divided among pytest-xdist's workers (each runs
    its own models; two threads each on two cores would wait on one another)."""
    from specviz.models.threads import usable_cpus

    return max(1, usable_cpus() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def pytest_runtest_setup(item):
    """The slow tier's tests run real models (a 1.5B forward: 0.72 s on one thread, 0.40 s on two): they get this
    process's share of the CPUs, as the app gets all; the fast tier's tiny tensors keep one thread. Set before the
    test's fixtures load anything, so a model is loaded and its kernels are timed with the threads it then runs on."""
    torch.set_num_threads(cpu_share() if item.get_closest_marker("slow") else 1)


def pytest_collection_modifyitems(items):
    """Mark every test that needs the real model as slow, so `pytest -m "not slow"` is the one-minute loop; and
    refuse a test of the launched app (or of Chromium) whose file is in no group that starts it: its worker would
    start another server (or browser)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & used:
            item.add_marker(pytest.mark.slow)
        allowed = {"browser"} if BROWSER_FIXTURES & used else SERVER_GROUPS if SERVER_FIXTURES & used else None
        group = item.get_closest_marker("xdist_group")
        if allowed and (group is None or group.args[0] not in allowed):
            raise pytest.UsageError(f"{item.nodeid} uses the launched app or Chromium: mark its file "
                                    f"`pytestmark = pytest.mark.xdist_group({sorted(allowed)[0]!r})`")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per CPU this process may use, the cgroup's quota included (psutil counts the host's)."""
    from specviz.models.threads import usable_cpus

    return usable_cpus()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler by file, with each xdist_group's files sent whole to one worker (its own
    `--dist loadgroup` reads groups from the test ids, which pytest 9 no longer lets a plugin change)."""
    from xdist.scheduler import LoadScopeScheduling

    groups = shared_worker_groups()

    class SharedWorkerScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((group for group, files in groups.items() if path in files), path)

        def _assign_work_unit(self, node) -> None:
            """The groups, the longest units (the most files first), go out first; the files then fill in around them."""
            waiting = [group for group in sorted(groups, key=lambda name: -len(groups[name])) if group in self.workqueue]
            if waiting:
                self.workqueue.move_to_end(waiting[0], last=False)
            super()._assign_work_unit(node)

    return SharedWorkerScheduling(config, log)


@pytest.fixture(scope="session")
def calibration_files(tmp_path_factory):
    """A folder for the tests' calibration files, and a fresh name in it for each test."""
    folder, numbers = tmp_path_factory.mktemp("calibration"), itertools.count()
    return lambda: folder / f"{next(numbers)}.json"


@pytest.fixture(autouse=True)
def own_calibration_file(calibration_files, monkeypatch):
    """Each test starts with no calibration kept by an earlier start (calibration_store), and keeps its own: a file
    of its own name that nothing wrote yet (not a tmp_path each: a folder per test is milliseconds, 1,800 times)."""
    monkeypatch.setenv("SPECVIZ_CALIBRATION", str(calibration_files()))


@pytest.fixture(scope="session")
def offline_target():
    """The embedded SmolLM2-135M-Instruct (converted from its GGUF on first use, then cached)."""
    from specviz.config import OFFLINE_MODEL
    from specviz.models import loading as models

    return models.load_model(OFFLINE_MODEL, torch.device("cpu"), torch.float32)


def cpu_seconds(process, over: float) -> float:
    """CPU seconds a psutil.Process used in the next `over` seconds: a server at rest uses next to none."""
    import time

    before = process.cpu_times()
    time.sleep(over)
    after = process.cpu_times()
    return after.user + after.system - before.user - before.system


AT_REST = 0.15  # CPU seconds in one second of a server at rest (a decoding one uses one to two)


def comes_to_rest(process, within: float = 5.0) -> list[float]:
    """The CPU seconds a psutil.Process used in each second that follows, up to the first one at rest (AT_REST) or
    `within` seconds: a stopped run's forward in flight may end late on a busy machine, a run that goes on never does."""
    seconds = [cpu_seconds(process, over=1.0)]
    while seconds[-1] >= AT_REST and len(seconds) < within:
        seconds.append(cpu_seconds(process, over=1.0))
    return seconds


def save_tiny_llama(folder, tokenizer, vocab_size, seed=0, layers=2):
    """A random-weight Llama with `tokenizer`, saved as a checkpoint folder, as a user's local model would be."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)  # only for the weights of this throwaway model, never for decoding
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    """The launched app's models directory (SPECVIZ_MODELS_DIR): the Custom pair loads folders from here only."""
    return tmp_path_factory.mktemp("models").resolve()


@pytest.fixture(scope="session")
def tiny_draft_folder(models_dir, offline_target):
    """A tiny random draft that shares the offline target's tokenizer: it drafts badly, which tests rejections."""
    return save_tiny_llama(models_dir / "tiny-draft", offline_target.tokenizer, 49152)


@pytest.fixture(scope="session")
def app_log(tmp_path_factory):
    """The launched app's log: everything it printed."""
    return tmp_path_factory.mktemp("app") / "app.log"


@pytest.fixture(scope="session")
def app_server(offline_target, app_log, models_dir):
    """`python app.py` started as a user would, on a free port of 127.0.0.1, loading local models from
    `models_dir`; its log (`app_log`) is shown if it dies. Yields (url, process)."""
    import subprocess

    from specviz.bench.loadtest import start_server

    log_path = app_log
    try:
        url, process = start_server(log_path, env={"SPECVIZ_MODELS_DIR": str(models_dir), **worker_threads()})
    except RuntimeError:
        pytest.fail(f"app.py did not start:\n{log_path.read_text()[-3000:]}")
    yield url, process
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def worker_threads() -> dict:
    """The environment that sizes a server's torch threads to this worker's share of the CPUs (nothing outside
    pytest-xdist: the app sizes its own)."""
    return {"OMP_NUM_THREADS": str(cpu_share())} if "PYTEST_XDIST_WORKER_COUNT" in os.environ else {}


@pytest.fixture(scope="session")
def app_url(app_server):
    return app_server[0]


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium, one for the whole session (a launch per module cost a cold page load each: its compiled
    scripts are cached per browser). Every module opens its own page in it."""
    from tests.browser import ARGS, CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's package 'chromium' (.ci/run does)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the Python package 'playwright' is not installed")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def page(app_url, chromium):
    """The app open in headless Chromium, one page per test module (tests/browser.py drives it)."""
    from tests.browser import POLL_MS, open_settings

    page = chromium.new_page(viewport={"width": 1400, "height": 1700})
    page.goto(app_url)
    page.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
    # The page opens on a recorded run (its stats say "stopped by", as a finished run's do): the tests start from
    # a cleared page, so that a wait for a run's end waits for their own run (test_browser_class checks the
    # recorded first screen on a page of its own).
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Recorded')", timeout=30_000, polling=POLL_MS)
    page.get_by_role("button", name="Reset", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 0", timeout=30_000, polling=POLL_MS)
    open_settings(page)  # the tests set γ, tokens and the drafter: unfolded once for the module
    # The module's runs skip the comparison with plain decoding (a warm-up of both paths and a second decoding of
    # every run): a test of the measured speedup turns it on; the defaults and first-screen tests keep it, on pages
    # opened afresh.
    page.get_by_label("Compare with plain decoding (measures the speedup)").uncheck()
    yield page
    page.close()
