"""Real beats, real worker: two `celery beat` processes on django-celery-beat's DatabaseScheduler, one of them restarted
between two minutes, send a schedule's firing several times; the worker launches exactly one run per minute. The only
test here that waits for the clock (at most two minute boundaries); the others drive time themselves."""

import signal
import subprocess
import sys

import pytest

from runs.models import Run
from schedules import services
from schedules.models import Firing
from tests.support.launching import wait_for
from tests.support.paths import REPO
from tests.support.workers import WorkerProcess, worker_environment

QUEUE = "schedule-tests"


class Beat:
    def __init__(self, env: dict, log_path):
        self.log_path = log_path
        self.log = open(log_path, "ab")  # noqa: SIM115  (kept open for the process's lifetime)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "agent_platform", "beat", "--loglevel", "INFO",
             "--max-interval", "1"],
            cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def sends(self) -> int:
        return self.log_path.read_bytes().count(b"(schedules.tasks.fire)")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


@pytest.mark.worker
@pytest.mark.usefixtures("transactional_db", "clean_broker")
def test_two_beats_and_a_restart_launch_one_run_per_firing(request, acme, tmp_path):
    request.getfixturevalue("messages_stub_server")  # the worker's launch asks the Models API about the model
    schedule = services.create_schedule(
        acme, name="Every minute", cron="* * * * *", timezone="Europe/Paris", run={"task": "Read the kettle price."}
    )
    task = schedule.periodic_task
    task.queue = QUEUE  # this test's worker, not another test's
    task.save()

    env = worker_environment()
    worker = WorkerProcess(env, tmp_path / "worker.log", concurrency=2, queues=QUEUE).start()
    beats = [Beat(env, tmp_path / "beat-a.log"), Beat(env, tmp_path / "beat-b.log")]
    try:
        first = wait_for(lambda: Firing.objects.filter(schedule=schedule).first(), timeout=90, message="a firing")
        beats[0].stop()
        beats.append(Beat(env, tmp_path / "beat-a-again.log"))  # a restarted beat
        wait_for(
            lambda: Firing.objects.filter(schedule=schedule, slot__gt=first.slot).exists(),
            timeout=90,
            message="the next minute's firing",
        )
        # At least one minute sent by two beats. Not every beat sends every minute: a beat reads the schedule from the
        # database again whenever another saves its entries (django-celery-beat), and may then find the minute sent.
        wait_for(
            lambda: sum(beat.sends() for beat in beats) > Firing.objects.filter(schedule=schedule).count(),
            timeout=20,
            message="a minute sent twice",
        )
    finally:
        for beat in beats:
            beat.stop()
        worker.stop()

    sends = sum(beat.sends() for beat in beats)
    firings = list(Firing.objects.filter(schedule=schedule).order_by("slot"))
    assert sends > len(firings), "a minute was sent by more than one beat"
    assert len(firings) in (2, 3) and len({f.slot for f in firings}) == len(firings)
    assert all(f.slot.second == 0 and f.run is not None for f in firings)
    runs = Run.objects.filter(schedule_firings__schedule=schedule)
    assert runs.count() == len(firings), f"one run per firing, though beat sent the task {sends} times"
