"""The default storage when STORAGE_URL names a bucket: django-storages' S3 storage, with one boto3 session per process.

django-storages makes a boto3 Session, and from it an S3 resource, for every thread that touches the storage. A worker
starts a thread for every run (its lane, which saves the live view's images), and a fresh Session loads botocore's
service models again: measured here at 1-3 s of CPU and about 12 MiB for each one, against about 30 ms and 0.4 MiB for
a resource made from a session already loaded. So the storage keeps one Session and makes each thread's resource
from it. A Session is not safe to share between threads while it makes clients, so that happens under a lock; each
thread still gets its own resource, as boto3 asks (resources are not thread-safe; their clients are).
"""

import threading
from typing import Any

from storages.backends.s3 import S3Storage


class BucketStorage(S3Storage):  # type: ignore[misc]  # django-storages ships no type information
    _session_lock = threading.RLock()

    def _create_session(self) -> Any:
        with self._session_lock:
            session = self.__dict__.get("_shared_session")
            if session is None:
                session = self.__dict__["_shared_session"] = super()._create_session()
            return session

    @property
    def connection(self) -> Any:
        with self._session_lock:
            return super().connection

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = super().__getstate__()
        state.pop("_shared_session", None)
        return state
