"""Who is watching a run's live view: the run page's socket marks its presence in the shared cache, the worker's
screencast (runtime.browser.live_view) streams to the run's live group only while it is marked."""

from django.core.cache import cache

PRESENCE_TTL_SECONDS = 6


def live_group(run_public_id: str) -> str:
    return f"live.{run_public_id}"


def presence_key(run_public_id: str) -> str:
    return f"live-viewers:{run_public_id}"


def mark_watched(run_public_id: str) -> None:
    """Called by the live socket while a viewer is connected (and refreshed well within the TTL)."""
    cache.set(presence_key(run_public_id), 1, timeout=PRESENCE_TTL_SECONDS)


async def amark_watched(run_public_id: str) -> None:
    await cache.aset(presence_key(run_public_id), 1, timeout=PRESENCE_TTL_SECONDS)


def is_watched(run_public_id: str) -> bool:
    try:
        return bool(cache.get(presence_key(run_public_id)))
    except Exception:
        return False  # no cache, no viewer: the run goes on without a live view
