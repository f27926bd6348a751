"""The demo as `make run` serves it: the scripted model's invoice task downloads the demo shop's invoice, and its
upload task sets a file it was given on the shop's upload form, which shows the file's sha256."""

import hashlib
import io

import pytest

from demo_site.files_views import INVOICE_NAME, invoice_csv
from runs.files import StoredFile, store_file
from runs.models import Run
from runs.presets import DOWNLOAD_INVOICE, UPLOAD_DOCUMENT
from tests.support import demo
from tests.support.factories import make_run
from tests.support.launching import enqueue, finished

demo_base_url = demo.demo_base_url
scripted_model = demo.scripted_model

QUEUE = "demo-files-tests"

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


@pytest.fixture
def demo_worker(django_db_blocker, clean_broker, demo_base_url, scripted_model, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    extra = {"RUN_FILES_DIR": str(tmp_path / "rf")}
    with demo.demo_worker(django_db_blocker, demo_base_url, scripted_model, tmp_path, QUEUE, extra) as worker:
        yield worker


def test_the_demo_downloads_the_invoice_and_uploads_a_given_file(acme, demo_base_url, demo_worker):
    invoice = finished(
        enqueue(make_run(acme, task=DOWNLOAD_INVOICE, start_url=f"{demo_base_url}demo/invoice/"), queue=QUEUE)
    )

    assert invoice.status == Run.Status.SUCCEEDED, invoice.error_message
    kept = StoredFile.objects.get(run=invoice)
    assert kept.name == INVOICE_NAME
    assert kept.sha256 == hashlib.sha256(invoice_csv()).hexdigest()
    assert INVOICE_NAME in invoice.output

    document = b"a signed form\n" * 40
    given = store_file(acme, io.BytesIO(document), name="signed-form.txt", source=StoredFile.Source.UPLOAD)
    upload = make_run(acme, task=UPLOAD_DOCUMENT, start_url=f"{demo_base_url}demo/upload/")
    upload.given_files.set([given])
    upload = finished(enqueue(upload, queue=QUEUE))

    assert upload.status == Run.Status.SUCCEEDED, upload.error_message
    assert upload.data == {"sha256": hashlib.sha256(document).hexdigest()}
