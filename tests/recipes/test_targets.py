"""What an action's element is (role, accessible name, nth, frame), found again by role, and the page's structure
fingerprint, in real Chromium through the toolset."""

import re

import pytest

from runtime.browser.targets import main_frame_of, printed_as, ref_frame, structure_fingerprint, structure_of
from tests.support import browsers
from tests.support.replies import ref_of

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser


def text_of(content) -> str:
    return "\n".join(block.get("text", "") for block in content if block.get("type") == "text")


@pytest.fixture
def toolset(host, site):
    toolset = browsers.make_toolset(host)
    browsers.call(host, toolset, "navigate", url=f"{site}/recipe_targets.html")
    yield toolset
    host.run(toolset.close(), timeout=30)


def snapshot_of(host, toolset) -> str:
    return text_of(browsers.call(host, toolset, "read_page"))


def test_the_second_of_two_buttons_of_one_name_is_nth_one_and_a_replay_clicks_it(host, toolset, site):
    snapshot = snapshot_of(host, toolset)
    refs = re.findall(r'button "More" \[ref=(\w+)\]', snapshot)
    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": refs[1]})
    step = toolset.take_step()

    assert step["member"] == "left_click"
    assert step["target"] == {"role": "button", "name": "More", "nth": 1, "frame": None}
    assert step["url"] == f"{site}/recipe_targets.html" and len(step["fingerprint"]) == 16
    assert toolset.take_step() is None, "taken once"

    browsers.call(host, toolset, "navigate", url=f"{site}/recipe_targets.html")
    assert host.run(toolset.replay("left_click", step["target"], None), timeout=30) is None
    assert "second" in text_of(browsers.call(host, toolset, "get_page_text"))


def test_a_fields_value_and_a_frames_button_are_found_again(host, toolset):
    snapshot = snapshot_of(host, toolset)
    field = {"type": "ref", "ref": ref_of(snapshot, "textbox", "Your name")}
    browsers.call(host, toolset, "form_input", target=field, value="Ada")
    filled = toolset.take_step()
    assert filled["target"] == {"role": "textbox", "name": "Your name", "nth": 0, "frame": None}

    in_frame = ref_of(snapshot, "button", "In frame")
    assert in_frame.startswith("f")
    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": in_frame})
    clicked = toolset.take_step()
    assert clicked["target"]["frame"]["name"] == "inner"
    assert (clicked["target"]["role"], clicked["target"]["name"], clicked["target"]["nth"]) == ("button", "In frame", 0)
    assert filled["fingerprint"] == clicked["fingerprint"], "a value typed and a name changed leave the shape as it was"


def test_after_a_second_document_the_pages_own_refs_carry_a_frame_number_and_stay_the_pages(host, toolset, site):
    # Playwright numbers the main frame anew on each document after the first: its refs read `f2e3` from here on,
    # like a child frame's, and only the snapshot tells them apart.
    browsers.call(host, toolset, "navigate", url=f"{site}/recipe_targets.html?again")
    snapshot = snapshot_of(host, toolset)
    more = re.findall(r'button "More" \[ref=(\w+)\]', snapshot)[0]
    in_frame = ref_of(snapshot, "button", "In frame")
    assert more.startswith("f") and in_frame.startswith("f") and ref_frame(more) != ref_frame(in_frame)
    assert main_frame_of(snapshot) == ref_frame(more)

    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": more})
    assert toolset.take_step()["target"] == {"role": "button", "name": "More", "nth": 0, "frame": None}
    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": in_frame})
    assert toolset.take_step()["target"]["frame"]["name"] == "inner"


def test_a_refs_frame_part_and_the_main_frames_from_a_snapshot():
    assert (ref_frame("e12"), ref_frame("f3e12"), ref_frame("button")) == ("", "f3", None)
    page = '- generic [active] [ref=f4e1]:\n  - button "Go" [ref=f4e2]\n  - iframe [ref=f4e3]:\n    - button [ref=f5e1]'
    assert main_frame_of(page) == "f4"
    assert main_frame_of('- generic [ref=e1]:\n  - iframe [ref=e2]:\n    - button "In" [ref=f1e1]') == ""
    assert main_frame_of('- heading "No refs" [level=1]') is None


def test_the_role_and_name_a_snapshot_printed_for_a_ref():
    page = '- generic [ref=e1]:\n  - button "Add \\"Kettle\\"" [ref=e12] [cursor=pointer]\n  - textbox [ref=e13]: Ada'
    assert printed_as(page, "e12") == ("button", 'Add "Kettle"')
    assert printed_as(page, "e13") == ("textbox", "")
    assert printed_as(page, "e1") == ("generic", "")
    assert printed_as(page, "e2") is None


def test_an_element_the_page_renamed_after_the_snapshot_is_clicked_and_its_target_is_what_the_page_holds(host, toolset):
    # The target is what the snapshot printed for the ref, checked against the page at the click: the other button
    # renamed since leaves one "More"; the clicked one renamed since has no target a replay could trust, and the
    # click still reaches it (describing it anew would have given it a new ref and lost the agent's).
    renamed = "() => { document.querySelectorAll('button')[0].textContent = 'Fewer' }"
    first, second = re.findall(r'button "More" \[ref=(\w+)\]', snapshot_of(host, toolset))
    host.run(toolset.active_page().evaluate(renamed))
    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": second})
    assert toolset.take_step()["target"] == {"role": "button", "name": "More", "nth": 0, "frame": None}

    browsers.call(host, toolset, "navigate", url=toolset.active_page().url)
    first, second = re.findall(r'button "More" \[ref=(\w+)\]', snapshot_of(host, toolset))
    host.run(toolset.active_page().evaluate(renamed))
    browsers.call(host, toolset, "left_click", target={"type": "ref", "ref": first})
    assert toolset.take_step()["target"] is None
    assert "first" in text_of(browsers.call(host, toolset, "get_page_text"))


def test_a_click_on_a_point_has_no_target_and_a_missing_element_is_said_so(host, toolset):
    browsers.call(host, toolset, "left_click", target={"type": "coordinate", "x": 5, "y": 5})
    assert toolset.take_step()["target"] is None

    missing = {"role": "button", "name": "Send message", "nth": 0, "frame": None}
    assert host.run(toolset.replay("left_click", missing, None), timeout=30) == "its target is not on the page"
    assert toolset.take_step() is None


def test_the_structure_leaves_out_names_values_and_text_but_not_roles_or_depth():
    before = '- heading "Thank you, Ada!" [level=1]\n- textbox "Name" [ref=e3]: Ada\n  - text: hello'
    after = '- heading "Thank you, Grace!" [level=1]\n- textbox "Name" [ref=e9]: Grace\n  - text: other'
    assert structure_of(before) == "0:heading\n0:textbox\n2:text"
    assert structure_fingerprint("u", before) == structure_fingerprint("u", after)
    assert structure_fingerprint("u", before) != structure_fingerprint("u", before + "\n- button")
    assert structure_fingerprint("u", before) != structure_fingerprint("v", before)
