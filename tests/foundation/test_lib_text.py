"""agent_platform.lib.text: the text of content blocks, first lines of errors, and text kept within a limit."""

import json

import pytest

from agent_platform.lib.text import IMAGE_PLACEHOLDER, TRUNCATED, bounded, content_text, first_line, json_text

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
BROWSER_STATE = {
    "type": "browser_state",
    "tabs": [{"tab_id": "t1", "title": "Home", "url": "https://a.test/", "active": True}],
}


def everything(value):
    """The judge's reading: images named, anything else as JSON, empty parts skipped."""
    return content_text(value, image=IMAGE_PLACEHOLDER, other=json_text, skip_empty=True)


@pytest.mark.parametrize("value", [None, "", []])
def test_nothing_is_the_empty_string(value):
    assert content_text(value) == ""
    assert everything(value) == ""


def test_a_string_is_its_own_text():
    assert content_text("Clicked.\nsecond line") == "Clicked.\nsecond line"


def test_text_blocks_are_joined_and_images_and_browser_state_left_out():
    content = [
        {"type": "text", "text": "Navigated."},
        IMAGE,
        {"type": "text", "text": "[notice] 3 turns left"},
        BROWSER_STATE,
    ]
    assert content_text(content) == "Navigated.\n[notice] 3 turns left"


def test_an_image_can_be_named():
    assert content_text([{"type": "text", "text": "Shot:"}, IMAGE], image="[image]") == "Shot:\n[image]"


def test_empty_text_blocks_are_kept_unless_skipped():
    content = [{"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]
    assert content_text(content) == "a\n\nb"
    assert content_text(content, skip_empty=True) == "a\nb"


def test_a_text_block_without_text_is_empty():
    assert content_text([{"type": "text"}]) == ""


def test_tool_results_nested_in_a_message_give_their_content():
    message = [
        {"type": "tool_result", "tool_use_id": "u1", "content": [{"type": "text", "text": "first"}, IMAGE]},
        {"type": "tool_result", "tool_use_id": "u2", "content": "second"},
        {"type": "text", "text": "and a note"},
    ]
    assert content_text(message) == "first\nsecond\nand a note"


def test_other_blocks_are_left_out_by_default():
    message = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "tool_use", "id": "u1", "name": "navigate", "input": {"url": "https://a.test/"}},
        {"type": "compaction", "content": "Summary of the run so far"},
        {"type": "text", "text": "Done."},
    ]
    assert content_text(message) == "Done."


def test_other_values_can_be_written_as_json():
    assert everything({"code": "boom", "detail": "ünïcode"}) == '{"code": "boom", "detail": "ünïcode"}'
    assert everything(42) == "42"
    assert everything([BROWSER_STATE]) == json.dumps(BROWSER_STATE, ensure_ascii=False)


def test_nested_lists_and_typeless_text_dicts():
    assert everything([["a", ["b", None]], {"text": "c"}, "", IMAGE]) == "a\nb\nc\n[image]"


def test_json_text_writes_what_json_cannot_hold_as_str():
    class Thing:
        def __str__(self):
            return "thing"

    assert json_text({"when": Thing(), "name": "Zoë"}) == '{"when": "thing", "name": "Zoë"}'


def test_first_line_of_an_error():
    assert first_line(RuntimeError("  Page crashed\n  at frame 3\n")) == "Page crashed"


def test_first_line_of_an_error_without_a_message_is_its_class():
    assert first_line(TimeoutError()) == "TimeoutError"
    assert first_line(ValueError("   \n ")) == "ValueError"


def test_bounded_leaves_short_text_alone():
    assert bounded("abc", 3) == "abc"
    assert bounded("", 0) == ""


def test_bounded_keeps_the_marker_within_the_limit():
    text = "x" * 100
    kept = bounded(text, 50)
    assert len(kept) == 50
    assert kept == "x" * (50 - len(TRUNCATED)) + TRUNCATED


def test_bounded_can_add_the_marker_after_the_limit():
    assert bounded("x" * 100, 50, marker_within_limit=False) == "x" * 50 + TRUNCATED


def test_bounded_below_the_marker_length_keeps_only_the_marker():
    assert bounded("x" * 100, 5) == TRUNCATED
