"""TODO.md structure checks and ticking."""

from gtd.workflow.todo import parse_todo

VALID = """# Ship it

## Action items
- [ ] First thing
  - Tests: unit test for the first thing
- [x] Already done
  - Tests: it was tested
- [ ] Second thing
  - Tests: integration test

## Open questions

## Learnings
- learned one
"""


def test_valid_plan_has_no_errors():
    todo = parse_todo(VALID)
    assert todo.errors() == []
    assert todo.title == "Ship it"
    assert [i.text for i in todo.unchecked()] == ["First thing", "Second thing"]
    assert todo.items[0].tests == "unit test for the first thing"
    assert todo.learnings == ["- learned one"]
    assert todo.open_questions == []


def test_each_problem_is_named():
    todo = parse_todo("no title here\n## Action items\n- [ ] thing without tests\n")
    errors = todo.errors()
    assert any("missing a title" in e for e in errors)
    assert any("## Open questions" in e for e in errors)
    assert any("## Learnings" in e for e in errors)
    assert any("action item 1" in e and "Tests:" in e for e in errors)


def test_empty_action_items_is_an_error():
    todo = parse_todo("# T\n## Action items\n## Open questions\n## Learnings\n")
    assert todo.errors() == ["`## Action items` has no items: write each as `- [ ] <item>`"]


def test_ticking_changes_only_the_checkbox():
    todo = parse_todo(VALID)
    ticked = todo.ticked([todo.unchecked()[1]])
    assert ticked == VALID.replace("- [ ] Second thing", "- [x] Second thing")


def test_open_questions_are_listed():
    todo = parse_todo(VALID.replace("## Open questions\n", "## Open questions\n- Which database?\n"))
    assert todo.open_questions == ["Which database?"]
