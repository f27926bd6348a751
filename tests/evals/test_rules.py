"""The rule scorer: each rule type against a finished suite run (exact and must-include against output and data, URL
match against the final URL, program checks against the page texts the worker read, and a fuzzy match put to the
judge model as one short question billed as judge usage), and the score stored beside the judgment."""

import pytest

from agent_platform.models import ModelRequest
from evals import scoring
from evals.models import RuleScore
from scripted_api.stub import JUDGE_QUEUE
from scripted_api.wire import json_reply
from tests import messages_stub as stub_fixtures
from tests.support.judging import user_text
from tests.support.suites import claiming_run, place_in_batch, suite_task

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = pytest.mark.django_db


def scored(acme, reference, **run_fields) -> RuleScore:
    run = claiming_run(acme, **run_fields)
    place_in_batch(run, suite_task(acme, reference=reference))
    return scoring.score_run(run)


def by_type(score: RuleScore) -> list[tuple[str, bool | None]]:
    return [(check["type"], check["passed"]) for check in score.checks]


@pytest.mark.parametrize(
    ("reference", "output", "data", "expected"),
    [
        ({"exact_match": "Second page"}, "  'second page'. ", None, True),
        ({"exact_match": "Second page"}, "It says: Second page", None, False),
        ({"exact_match": "42"}, "Here is the count.", {"count": 42}, True),
        ({"exact_match": "Paris |OR| Lyon"}, "lyon", None, True),
    ],
    ids=["normalized-output", "not-exact", "a-data-value", "alternatives"],
)
def test_exact_match_against_the_output_and_every_data_value(acme, reference, output, data, expected):
    score = scored(acme, reference, output=output, data=data)
    assert by_type(score) == [("exact_match", expected)] and score.passed is expected


def test_must_include_needs_every_string_in_the_output_or_data(acme):
    score = scored(acme, {"must_include": ["second", "Heading 7"]}, output="The second page.", data={"h": "heading 7"})
    assert by_type(score) == [("must_include", True), ("must_include", True)] and score.passed is True
    score = scored(acme, {"must_include": ["second", "Heading 8"]}, output="The second page.", data={"h": "heading 7"})
    assert by_type(score) == [("must_include", True), ("must_include", False)] and score.passed is False


@pytest.mark.parametrize(
    ("reference_url", "final_url", "expected"),
    [
        ("http://shop.test/second", "http://shop.test/second/", True),
        ("http://shop.test/search?q=mug", "http://shop.test/search?page=2&q=mug", True),
        ("http://shop.test/search?q=mug", "http://shop.test/search?q=cup", False),
        ("http://shop.test/second", "http://other.test/second", False),
        ("http://shop.test/a |OR| http://shop.test/second", "http://shop.test/second", True),
    ],
    ids=["trailing-slash", "query-subset", "query-differs", "other-host", "alternatives"],
)
def test_url_match_against_the_final_url(acme, reference_url, final_url, expected):
    score = scored(acme, {"reference_url": reference_url}, final_view={"url": final_url})
    assert by_type(score) == [("url_match", expected)]
    assert score.checks[0]["found"] == final_url


def test_program_html_compares_the_texts_the_worker_read_before_the_browser_closed(acme):
    reference = {
        "program_html": [
            {"url": "last", "locator": "document.querySelector('h1').outerText", "must_include": ["Second"]},
            {"url": "http://shop.test/cart", "locator": "#total", "exact_match": "12.50"},
            {"url": "last", "locator": "#missing", "must_include": ["anything"]},
        ]
    }
    score = scored(acme, reference, final_view={"reference_texts": ["Second page", " 12.50 ", None]})
    assert by_type(score) == [("program_html", True), ("program_html", True), ("program_html", False)]
    assert score.checks[2]["found"] is None and score.passed is False


def test_a_run_with_no_rule_to_check_is_scored_undecided(acme):
    score = scored(acme, {"answer": "Chocolate chip cookies"})
    assert score.checks == [] and score.passed is None


def test_a_fuzzy_match_asks_the_judge_one_short_question_billed_as_judge(acme, messages_stub):
    messages_stub.judge(json_reply({"same": True, "reason": "Both name the second page."}))
    run = claiming_run(acme, output="I ended on page two.")
    place_in_batch(run, suite_task(acme, reference={"fuzzy_match": ["The second page"], "must_include": ["page"]}))

    score = scoring.score_run(run)

    assert by_type(score) == [("must_include", True), ("fuzzy_match", True)] and score.passed is True
    [request] = messages_stub.requests_for(JUDGE_QUEUE)
    text = user_text(request)
    assert "The second page" in text and "I ended on page two." in text
    assert list(ModelRequest.objects.filter(run=run).values_list("source", flat=True)) == ["judge"]
    assert RuleScore.objects.get(run=run).passed is True


def test_a_fuzzy_match_the_judge_denies_fails_the_score(acme, messages_stub):
    messages_stub.judge(json_reply({"same": False, "reason": "The answer names another page."}))
    score = scored(acme, {"fuzzy_match": "N/A"}, output="The first page.")
    assert by_type(score) == [("fuzzy_match", False)] and score.passed is False


def test_a_run_outside_a_suite_is_not_scored(acme):
    assert scoring.score_run(claiming_run(acme)) is None
    assert not RuleScore.objects.exists()


def test_the_batchs_runs_list_the_rule_score_beside_the_verdict(api, acme):
    run = claiming_run(acme, output="The second page.")
    item = place_in_batch(run, suite_task(acme, reference={"must_include": ["second"]}))
    scoring.score_run(run)
    [listed] = api.get(f"/batches/{item.batch.public_id}/runs").json()["runs"]
    assert (listed["run_id"], listed["rule_passed"], listed["verdict"]) == (run.public_id, True, None)
