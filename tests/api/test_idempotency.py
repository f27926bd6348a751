"""Idempotency-Key on launch: the same key and body replay the first run, another body is a conflict, keys expire."""

from datetime import timedelta

from django.utils import timezone

from runs.models import Run


def test_a_key_replayed_with_the_same_body_returns_the_first_run(api):
    headers = {"Idempotency-Key": "same-body"}
    body = {"task": "t", "start_url": "https://shop.example.com/", "secrets": {"SHOP_PASSWORD": "pa55-word"}}
    first = api.post("/runs", body, headers=headers)
    again = api.post("/runs", dict(reversed(body.items())), headers=headers)  # key order is not a difference

    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert Run.objects.count() == 1


def test_a_key_replayed_with_another_body_is_a_conflict(api):
    headers = {"Idempotency-Key": "other-body"}
    first = api.post("/runs", {"task": "Buy the lamp."}, headers=headers)
    other = api.post("/runs", {"task": "Buy the kettle."}, headers=headers)
    other_secret = api.post("/runs", {"task": "Buy the lamp.", "secrets": {"PIN": "0000-x"}}, headers=headers)

    assert first.status_code == 201
    assert other.status_code == 409
    error = other.json()["error"]
    assert error["type"] == "conflict"
    assert error["detail"] == {"code": "idempotency_key_reused", "run_id": first.json()["id"]}
    assert "Idempotency-Key" in error["message"]
    assert other_secret.status_code == 409
    assert "0000-x" not in other_secret.content.decode()
    assert Run.objects.count() == 1


def test_a_key_expires_after_24_hours(api):
    headers = {"Idempotency-Key": "old-key"}
    first = api.post("/runs", {"task": "t"}, headers=headers).json()
    Run.objects.filter(public_id=first["id"]).update(created_at=timezone.now() - timedelta(hours=24, minutes=1))

    fresh = api.post("/runs", {"task": "another task"}, headers=headers)

    assert fresh.status_code == 201
    assert fresh.json()["id"] != first["id"]
    assert "Idempotent-Replayed" not in fresh.headers
    assert Run.objects.get(public_id=fresh.json()["id"]).idempotency_key == "old-key"
    assert Run.objects.get(public_id=first["id"]).idempotency_key is None
