"""Cooperative cancel and progress (specviz.job): a cancelled run stops within one model forward, at any stage,
and the loading stages are named as they start."""

import threading
import time

import pytest
import torch

from specviz import job
from specviz.app import progress, worker
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.job import Cancelled, Job
from specviz.models import loading as models
from tests.fakes import fake_pipeline

CONFIG = DecodeConfig(gamma=3, max_new_tokens=60, temperature=1.0, seed=2, chat=False)


def test_outside_a_job_check_and_stage_do_nothing():
    job.check()
    job.stage("anything")


def test_a_cancelled_job_stops_at_the_next_check_and_names_its_stage():
    stages = []
    current = Job(on_stage=stages.append)
    with job.running(current):
        job.stage("Converting the GGUF")
        job.check()
        current.cancel()
        with pytest.raises(Cancelled, match="Converting the GGUF"):
            job.check()
        with pytest.raises(Cancelled):
            job.stage("Loading")  # a new stage checks first
    assert stages == ["Converting the GGUF"]
    job.check()  # the job ended with its context


def test_a_model_forward_under_a_cancelled_job_does_not_run():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)
    model = models.TransformersModel(LlamaForCausalLM(config).eval(), 32, torch.device("cpu"))
    current = Job()
    with job.running(current):
        model.feed(torch.tensor([1, 2, 3]))
        current.cancel()
        with pytest.raises(Cancelled):
            model.feed(torch.tensor([4]))
    assert model.forward_calls == 1 and model.cached_length == 3


def test_the_engine_stops_between_rounds_once_cancelled():
    pipeline, current = fake_pipeline(8, draft_salt=1), Job()
    rounds = engine.speculative_decode(pipeline, "abcabcab", CONFIG)
    with job.running(current):
        next(rounds), next(rounds)
        calls = pipeline.target.forward_calls
        current.cancel()
        with pytest.raises(Cancelled):
            next(rounds)
    assert pipeline.target.forward_calls == calls  # no target forward after the cancel


def test_a_cancelled_job_frees_the_model_thread_within_one_item():
    current, produced = Job(), []

    def slow_rounds():
        for index in range(1000):
            job.check()  # as the engine does between rounds
            time.sleep(0.01)
            produced.append(index)
            yield index

    feed = worker.Ahead(slow_rounds(), job=current)
    assert feed.newer_than(0) is not None
    current.cancel()
    deadline = time.perf_counter() + 5
    while feed.newer_than(10**6, timeout=0.05) is None and time.perf_counter() < deadline:
        pass
    count = len(produced)
    assert worker.call(lambda: "free") == "free"
    time.sleep(0.1)
    assert len(produced) == count < 1000  # nothing more was produced


def test_the_model_thread_runs_each_task_under_its_own_job():
    first, second = Job(), Job()
    first.cancel()
    with pytest.raises(Cancelled):
        worker.call(job.check, job=first)
    assert worker.call(job.check, job=second) is None
    assert worker.call(job.check) is None  # a task without a job is never cancelled


def test_loading_a_model_names_its_stages(tmp_path):
    from transformers import AutoTokenizer

    from specviz.models.cache import WeightsCache
    from tests.conftest import save_tiny_llama

    try:
        tokenizer = AutoTokenizer.from_pretrained(models.offline_checkpoint())
    except models.ModelUnavailable as error:
        pytest.skip(str(error))
    folder = save_tiny_llama(tmp_path / "tiny", tokenizer, 49152, layers=1)
    stages = []
    with job.running(Job(on_stage=stages.append)):
        models.load_model(folder, cache=WeightsCache())
    assert stages[0].startswith(f"Loading {folder} on cpu") and stages[-1] == f"Packing {folder}'s weights for this CPU"


def test_the_status_line_names_the_stage_and_the_time():
    current, started = Job(), time.perf_counter() - 3.0
    assert progress.waiting_line(current, started).startswith("**Starting** · 3.0 s")
    current.enter("Loading org/model_name on cpu")
    line = progress.waiting_line(current, started)
    assert line.startswith("**Loading org/model\\_name on cpu** · 0.0 s (3.0 s since Run)"), line
    assert "another run" in progress.waiting_line(current, started, queued=True)


def test_a_job_slot_cancels_the_sessions_previous_run():
    slot = progress.JobSlot()
    first = slot.start()
    second = slot.start()  # a new Run or Step
    assert first.cancelled and not second.cancelled
    slot.cancel()  # Stop or Reset
    assert second.cancelled
    import copy

    assert copy.deepcopy(slot).job is None  # gr.State gives every new session a fresh slot


def test_stop_pressed_before_a_queued_run_starts_stops_it_and_not_a_later_one():
    """The page counts Run and Step presses at once (not queued); a Stop after a press and before that press's job
    starts stops the job as it starts; a press after the Stop runs; API callers, who press nothing, are never stopped
    ahead."""
    slot = progress.JobSlot()
    assert not slot.start().cancelled  # an API caller's run: no press counted, nothing stopped ahead
    slot.stop()
    assert not slot.start().cancelled  # still no press: a Stop long ago does not stop a later API run
    slot.pressed()  # Run pressed; the run waits in the queue
    slot.stop()  # Stop pressed 50 ms later, before the run started
    assert slot.start().cancelled  # the run starts stopped: it ends before its first round
    slot.pressed()  # Run pressed again, after the Stop
    job = slot.start()
    assert not job.cancelled
    slot.stop()
    assert job.cancelled


def test_cancel_reaches_a_job_from_another_thread_at_once():
    current = Job()
    threading.Timer(0.05, current.cancel).start()
    with job.running(current), pytest.raises(Cancelled):
        for _ in range(20_000):  # a bounded wait: without the cancel, no Cancelled and the test fails
            job.check()
            time.sleep(0.001)
