"""The Schedules page: the form adds a schedule (a bad one is refused with the field named and loses what was typed),
the list shows next firings and the history's verdicts escaped, pause and resume, another workspace's is a 404."""

from schedules.models import Schedule

FORM = {"name": "Kettle price", "cron": "*/30 * * * *", "timezone": "Europe/Paris", "task": "Read the kettle price."}


def test_the_form_adds_a_schedule_and_the_page_shows_its_next_firings(alice_client, acme):
    refused = alice_client.post("/schedules/new/", {**FORM, "cron": "99 * * * *"})
    assert refused.status_code == 400 and b"cron: " in refused.content
    assert b"Read the kettle price." in refused.content, "what was typed is kept"
    assert not Schedule.objects.exists()

    added = alice_client.post("/schedules/new/", {**FORM, "start_url": "https://shop.example.com/", "judge": "on"})
    assert added.status_code == 302
    schedule = Schedule.objects.get()
    assert schedule.workspace == acme and schedule.run == {
        "task": "Read the kettle price.", "start_url": "https://shop.example.com/", "judge": True,
    }  # fmt: skip
    page = alice_client.get("/schedules/").content.decode()
    assert (
        schedule.public_id in page
        and "Next firings" in page
        and page.count(":00</span>") + page.count(":30</span>") >= 5
    )
    assert 'href="/schedules/"' in page and "aria-current" in page

    alice_client.post(f"/schedules/{schedule.public_id}/pause/")
    schedule.refresh_from_db()
    assert not schedule.enabled and "none while paused" in alice_client.get("/schedules/").content.decode()
    alice_client.post(f"/schedules/{schedule.public_id}/resume/")
    schedule.refresh_from_db()
    assert schedule.enabled


def test_a_name_is_escaped_and_another_workspace_cannot_touch_it(alice_client, charlie_client):
    alice_client.post("/schedules/new/", {**FORM, "name": "<script>alert(1)</script>"})
    schedule = Schedule.objects.get()
    page = alice_client.get("/schedules/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert schedule.public_id not in charlie_client.get("/schedules/").content.decode()
    for action in ("pause", "delete"):
        assert charlie_client.post(f"/schedules/{schedule.public_id}/{action}/").status_code == 404
    schedule.refresh_from_db()
    assert schedule.enabled
