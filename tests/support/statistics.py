"""The batch statistics computed by hand, independently of evals.stats, for the evals tests to check it against."""

import math


def wilson_by_hand(successes: int, n: int) -> tuple[float, float]:
    """The textbook form: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z the 97.5% normal quantile."""
    z = 1.959963984540054
    p = successes / n
    low = (p + z**2 / (2 * n) - z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))) / (1 + z**2 / n)
    high = (p + z**2 / (2 * n) + z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))) / (1 + z**2 / n)
    return low, high


def pass_at_k_by_product(n: int, c: int, k: int) -> float:
    """Chen et al.'s numerically stable form of 1 - C(n-c,k)/C(n,k): 1 - prod_{i=n-c+1..n} (1 - k/i)."""
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1 - k / i
    return 1 - product


def matrix_cell(success: bool, verdict: str, blocked_or_impossible: bool) -> str:
    """The claim-versus-judge cell of one run: the agent's claim of success against the judge's verdict."""
    if verdict == "uncertain":
        return "uncertain"
    if blocked_or_impossible:
        return "blocked_or_impossible"
    if verdict == "pass":
        return "success_pass" if success else "underclaim"
    return "overclaim" if success else "failure_fail"


def kappa_by_hand(both_success: int, rater_only: int, person_only: int, both_failure: int) -> tuple[float, float]:
    """Cohen's kappa of a 2x2 table and its large-sample standard error, written out cell by cell:
    po = (a + d) / n; pe = ((a + b)(a + c) + (c + d)(b + d)) / n²; kappa = (po - pe) / (1 - pe);
    se = sqrt(po (1 - po) / (n (1 - pe)²))."""
    a, b, c, d = both_success, rater_only, person_only, both_failure
    n = a + b + c + d
    po = (a + d) / n
    pe = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
    return (po - pe) / (1 - pe), math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
