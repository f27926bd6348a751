"""The judge is told which files the run downloaded (name, size, type); a run that downloaded none reads as before."""

import io

import pytest
from django.conf import settings

from judge.judging import judge_request
from runs.files import StoredFile, store_file
from tests import messages_stub as stub_fixtures
from tests.support.factories import make_run
from tests.support.judging import play_trajectory, user_text

messages_stub_server = stub_fixtures.messages_stub_server

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def test_the_judge_reads_the_files_the_run_downloaded(messages_stub_server, acme):
    run = make_run(acme, judge=True)
    play_trajectory(run)
    store_file(acme, io.BytesIO(b"a,b\n1,2\n"), name="invoice-11.csv", source=StoredFile.Source.DOWNLOAD, run=run)

    text = user_text(judge_request(run, [], settings.JUDGE_MODEL))

    assert "# Files the run downloaded\n- invoice-11.csv (8 bytes, text/csv)" in text
    assert text.index("# Steps the run took") < text.index("# Files the run downloaded")
    assert text.index("# Files the run downloaded") < text.index("# The final page as the agent last saw it")


def test_a_run_without_downloads_has_no_files_section(messages_stub_server, acme):
    run = make_run(acme, judge=True)
    play_trajectory(run)
    given = store_file(acme, io.BytesIO(b"x"), name="given.txt", source=StoredFile.Source.UPLOAD)
    run.given_files.set([given])

    assert "Files the run downloaded" not in user_text(judge_request(run, [], settings.JUDGE_MODEL))
