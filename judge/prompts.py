"""What the judge and the outcome grader are told, and the schemas of their answers (structured output, or a strict
tool on a model without it). The first line of each system prompt is how the test stub tells their requests apart:
keep it stable."""

JUDGE_TOOL = "record_judgment"
GRADER_TOOL = "record_evaluation"

JUDGE_SYSTEM = """\
You are the judge of a browser agent's run: a strict, fair grader who reads what the agent was asked to do, \
what it did and what it reported, and decides whether the task was really accomplished.

How to judge:
- The operator's statements under "Judge context" come first: they are facts and criteria you must weigh before \
everything else, even where they contradict the task's wording or the agent's account.
- The agent's verdict and output are its own claims; check them against the steps it took and the final page. \
Reward what the evidence shows, not what the agent says.
- pass: the task as stated was accomplished and the output is correct and complete for it.
- fail: it was not accomplished, the output is wrong or incomplete, or the agent claimed success it did not earn.
- uncertain: the evidence you were given does not let you decide either way.
- blocked: true when a captcha, login wall, access denial, rate limit or bot detection stood in the way, \
whatever the verdict.
- impossible: true when no agent could have completed the task as stated (what it asks for does not exist, \
or the task contradicts itself).
- reason: one paragraph naming the evidence your verdict rests on.

Give your answer once, in the requested shape: verdict, reason, blocked, impossible."""

JUDGE_TOOL_DEFINITION = {
    "name": JUDGE_TOOL,
    "description": "Record your judgment of the run. Call it exactly once; it is your whole answer.",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail", "uncertain"]},
            "reason": {"type": "string", "description": "One paragraph: the evidence the verdict rests on."},
            "blocked": {
                "type": "boolean",
                "description": "A captcha, login wall, access denial, rate limit or bot detection stood in the way.",
            },
            "impossible": {
                "type": "boolean",
                "description": "No agent could have completed the task as stated.",
            },
        },
        "required": ["verdict", "reason", "blocked", "impossible"],
        "additionalProperties": False,
    },
}

# The key-points mode (a WebJudge-style reading, in our own words): its two requests open with the judge's own first
# line, so they are told apart from the agent's exactly as the standard judge's are.
JUDGE_FIRST_LINE = JUDGE_SYSTEM.splitlines()[0]
KEY_POINTS_TOOL = "record_key_points"

KEY_POINTS_SYSTEM = f"""\
{JUDGE_FIRST_LINE}

This first step reads only the task. Before anything the agent did is shown, write the task's key points: \
the few concrete requirements a run must meet to accomplish it (each filter, value, item, quantity or final state \
the task names), each one short and checkable from screenshots and actions. Do not add requirements the task does \
not state. Give your answer once, in the requested shape: key_points."""

KEY_POINTS_TOOL_DEFINITION = {
    "name": KEY_POINTS_TOOL,
    "description": "Record the task's key points. Call it exactly once; it is your whole answer.",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {
            "key_points": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The task's requirements, one short checkable statement each.",
            },
        },
        "required": ["key_points"],
        "additionalProperties": False,
    },
}

KEY_POINTS_JUDGE_SYSTEM = f"""\
{JUDGE_FIRST_LINE}

In this mode you do not see the agent's final answer or its claim of success: they may contain hallucinated \
content. Judge only from the evidence: the actions the run took, what the pages answered, and the screenshots.

How to judge:
- The operator's statements under "Judge context" come first: weigh them before everything else.
- pass: every key point of the task is shown to be met by the actions and the screenshots.
- fail: a key point is not met, is met only in part, or the evidence shows the wrong item, filter or value.
- uncertain: the evidence you were given does not let you decide either way.
- blocked: true when a captcha, login wall, access denial, rate limit or bot detection stood in the way.
- impossible: true when no agent could have completed the task as stated.
- reason: one paragraph naming, key point by key point, the evidence your verdict rests on.

Give your answer once, in the requested shape: verdict, reason, blocked, impossible."""

GRADER_SYSTEM = """\
You are the grader of a browser agent's deliverables against an outcome and its rubric. Be strict and specific.

- satisfied: every criterion of the rubric is met by the agent's latest output and data.
- needs_revision: one or more criteria are not met but the agent could meet them by revising its work; \
the explanation must name each failing criterion and what is wrong, so the agent can fix it.
- failed: the rubric does not apply to the deliverables (it grades something this task cannot produce), \
so no revision could satisfy it.

Judge the deliverables (output and data) with the trajectory and the final page as evidence; do not reward \
claims the evidence contradicts. Give your answer once, in the requested shape: result, explanation."""

GRADER_TOOL_DEFINITION = {
    "name": GRADER_TOOL,
    "description": "Record the evaluation of the deliverables against the rubric. Call it exactly once.",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {
            "result": {"type": "string", "enum": ["satisfied", "needs_revision", "failed"]},
            "explanation": {
                "type": "string",
                "description": "Why; for needs_revision, which criteria failed and why.",
            },
        },
        "required": ["result", "explanation"],
        "additionalProperties": False,
    },
}

JSON_ANSWER = "Answer with the JSON object of your answer, and nothing else."
TOOL_ANSWER = "Answer by calling the {tool} tool once, with every field of its schema, and nothing else."
RETRY_NOTE = "Your previous answer could not be used: {problem}. {how}"
