"""The statistics of repeated runs: Wilson intervals, unbiased pass@k, medians, claim-versus-judge cells, scoring."""

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

# The two-sided 95% quantile of the standard normal distribution.
Z95 = 1.959963984540054

# Claim-versus-judge cells; uncertain verdicts and blocked/impossible readings are counted apart from the four.
SUCCESS_PASS = "success_pass"
OVERCLAIM = "overclaim"  # the agent claimed success, the judge failed it
UNDERCLAIM = "underclaim"  # the agent reported failure, the judge passed it
FAILURE_FAIL = "failure_fail"
UNCERTAIN = "uncertain"
BLOCKED_OR_IMPOSSIBLE = "blocked_or_impossible"
CELLS = (SUCCESS_PASS, OVERCLAIM, UNDERCLAIM, FAILURE_FAIL, UNCERTAIN, BLOCKED_OR_IMPOSSIBLE)
TRIAGE_CELLS = (OVERCLAIM, UNDERCLAIM, UNCERTAIN)


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95% by default); None without observations."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k from n samples with c passes: 1 - C(n-c, k) / C(n, k); None when k > n."""
    if k < 1 or k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def median(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.median(values) if values else None


def cell(
    agent_success: bool | None, verdict: str | None, blocked: bool = False, impossible: bool = False
) -> str | None:
    """The claim-versus-judge cell of a judged run; None for a run without a judgment."""
    if verdict is None:
        return None
    if verdict == "uncertain":
        return UNCERTAIN
    if blocked or impossible:
        return BLOCKED_OR_IMPOSSIBLE
    claimed = agent_success is True
    if verdict == "pass":
        return SUCCESS_PASS if claimed else UNDERCLAIM
    return OVERCLAIM if claimed else FAILURE_FAIL


def matrix(cells: Iterable[str | None]) -> dict[str, int]:
    counts = dict.fromkeys(CELLS, 0)
    for value in cells:
        if value is not None:
            counts[value] += 1
    return counts


@dataclass(frozen=True)
class RunFacts:
    """What the statistics read of one finished run, and the judgment that counts for it."""

    success: bool | None
    turns: int | None
    cost_usd: Decimal
    duration_seconds: float | None
    data: object = None
    verdict: str | None = None
    blocked: bool = False
    impossible: bool = False

    @property
    def cell(self) -> str | None:
        return cell(self.success, self.verdict, self.blocked, self.impossible)


@dataclass(frozen=True)
class Scoring:
    """Runs whose data equals the expected data, and per top-level field of it."""

    runs: int
    exact: int
    exact_rate: float | None
    fields: dict[str, float | None] = field(default_factory=dict)


def score(expected: object, datas: Sequence[object]) -> Scoring:
    exact = sum(1 for data in datas if data == expected)
    fields: dict[str, float | None] = {}
    if isinstance(expected, dict):
        for key, value in expected.items():
            matched = sum(1 for data in datas if isinstance(data, dict) and key in data and data[key] == value)
            fields[key] = matched / len(datas) if datas else None
    return Scoring(runs=len(datas), exact=exact, exact_rate=exact / len(datas) if datas else None, fields=fields)


@dataclass(frozen=True)
class GroupStats:
    """Per task and configuration: the agent's success rate, the judge's pass@k, cost, turns, duration, flakiness."""

    runs: int
    successes: int
    success_rate: float | None
    success_interval: tuple[float, float] | None
    judged: int
    passes: int
    pass_at_1: float | None
    pass_at_k: dict[int, float | None]
    median_turns: float | None
    cost_usd: Decimal
    cost_per_run_usd: Decimal | None
    cost_per_success_usd: Decimal | None
    median_duration_seconds: float | None
    flaky: bool
    matrix: dict[str, int]
    scoring: Scoring | None


def group_stats(facts: Sequence[RunFacts], expected: object = None) -> GroupStats:
    """Statistics of the finished (not cancelled) runs of one task x configuration.

    A success for cost and flakiness is the judge's pass where the run was judged, else the agent's own success.
    """
    n = len(facts)
    successes = sum(1 for fact in facts if fact.success is True)
    judged = [fact for fact in facts if fact.verdict is not None]
    passes = sum(1 for fact in judged if fact.verdict == "pass")
    outcomes = [fact.verdict == "pass" if fact.verdict is not None else fact.success is True for fact in facts]
    good = sum(outcomes)
    cost = sum((fact.cost_usd for fact in facts), Decimal(0))
    return GroupStats(
        runs=n,
        successes=successes,
        success_rate=successes / n if n else None,
        success_interval=wilson_interval(successes, n),
        judged=len(judged),
        passes=passes,
        pass_at_1=pass_at_k(len(judged), passes, 1),
        pass_at_k={k: pass_at_k(len(judged), passes, k) for k in range(1, len(judged) + 1)},
        median_turns=median(fact.turns for fact in facts if fact.turns is not None),
        cost_usd=cost,
        cost_per_run_usd=cost / n if n else None,
        cost_per_success_usd=cost / good if good else None,
        median_duration_seconds=median(fact.duration_seconds for fact in facts if fact.duration_seconds is not None),
        flaky=0 < good < n,
        matrix=matrix(fact.cell for fact in facts),
        scoring=score(expected, [fact.data for fact in facts]) if expected is not None else None,
    )


@dataclass(frozen=True)
class Calibration:
    """How often the judge was right where an operator recorded the truth (uncertain verdicts counted apart)."""

    reviewed: int
    correct: int
    accuracy: float | None
    passes_reviewed: int
    false_passes: int
    false_pass_rate: float | None
    fails_reviewed: int
    false_fails: int
    false_fail_rate: float | None
    uncertain_reviewed: int


def calibration(rows: Iterable[tuple[str, str]]) -> Calibration:
    """From (verdict, truth) pairs: the judge is right exactly when the truth is judge_right.

    A pass verdict that is not right is a false pass, a fail verdict that is not right a false fail; each rate is
    over the reviewed verdicts of that kind.
    """
    passes = fails = false_passes = false_fails = uncertain = 0
    for verdict, truth in rows:
        right = truth == "judge_right"
        if verdict == "pass":
            passes += 1
            false_passes += not right
        elif verdict == "fail":
            fails += 1
            false_fails += not right
        else:
            uncertain += 1
    reviewed = passes + fails
    correct = reviewed - false_passes - false_fails
    return Calibration(
        reviewed=reviewed,
        correct=correct,
        accuracy=correct / reviewed if reviewed else None,
        passes_reviewed=passes,
        false_passes=false_passes,
        false_pass_rate=false_passes / passes if passes else None,
        fails_reviewed=fails,
        false_fails=false_fails,
        false_fail_rate=false_fails / fails if fails else None,
        uncertain_reviewed=uncertain,
    )


def duration_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


# --- agreement with people -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How a rater (a judge model in a mode, the rule scorer, the agent's own claim) agrees with people's labels.

    `matrix`: both_success (rater success, person success), rater_only, person_only, both_failure. Pairs where the
    rater gave no decision (an uncertain verdict, no rule to check) are counted in `undecided` and left out."""

    n: int
    agree: int
    percent_agreement: float | None
    kappa: float | None
    kappa_interval: tuple[float, float] | None
    rater_success_rate: float | None
    human_success_rate: float | None
    success_rate_gap: float | None  # rater's rate minus the people's
    matrix: dict[str, int]
    undecided: int


def agreement(pairs: Iterable[tuple[bool | None, bool]], z: float = Z95) -> Agreement:
    """Cohen's kappa with its large-sample 95% interval, kappa ± z·sqrt(po(1-po) / (n(1-pe)²)), percent agreement,
    the success-rate gap and the confusion matrix of (rater, person) pairs."""
    both_success = rater_only = person_only = both_failure = undecided = 0
    for rater, person in pairs:
        if rater is None:
            undecided += 1
        elif rater and person:
            both_success += 1
        elif rater:
            rater_only += 1
        elif person:
            person_only += 1
        else:
            both_failure += 1
    n = both_success + rater_only + person_only + both_failure
    matrix_ = {
        "both_success": both_success,
        "rater_only": rater_only,
        "person_only": person_only,
        "both_failure": both_failure,
    }
    if n == 0:
        return Agreement(0, 0, None, None, None, None, None, None, matrix_, undecided)
    agree = both_success + both_failure
    po = agree / n
    rater_rate = (both_success + rater_only) / n
    human_rate = (both_success + person_only) / n
    pe = rater_rate * human_rate + (1 - rater_rate) * (1 - human_rate)
    kappa: float | None
    interval: tuple[float, float] | None
    if pe < 1:
        kappa = (po - pe) / (1 - pe)
        half = z * math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
        interval = (max(-1.0, kappa - half), min(1.0, kappa + half))
    else:
        # Both said the same one thing every time: agreement is perfect, but chance explains it all.
        kappa, interval = None, None
    return Agreement(
        n=n,
        agree=agree,
        percent_agreement=po,
        kappa=kappa,
        kappa_interval=interval,
        rater_success_rate=rater_rate,
        human_success_rate=human_rate,
        success_rate_gap=rater_rate - human_rate,
        matrix=matrix_,
        undecided=undecided,
    )
