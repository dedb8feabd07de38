"""A run's notes carry the page's words: what the page said back to a step, and a control with no label of its own
named by the words beside it (real runs from ../shared/data)."""

from __future__ import annotations

from runbook.pools.documents import trajectory_docs
from runbook.trajectory.model import trajectory_from_dict
from tests.conftest import shared_runs


def notes_of(tid: str) -> dict[str, str]:
    run = trajectory_from_dict(shared_runs(tid)[tid], check_screenshots=False)
    return {doc.meta["kind"]: doc.meta["text"] for doc in trajectory_docs(run, tid).notes}


def test_the_notes_say_what_the_page_answered_a_step():
    notes = notes_of("inf-linear-account-settings-20260219_022152-e3")
    assert "the page said: Pronouns updated" in notes["hints"]
    assert "→ page: Pronouns updated" in notes["procedure"]


def test_a_select_without_a_label_is_named_by_the_words_beside_it():
    notes = notes_of("wa-shopping-332")
    assert "select_option combobox 'Show … per page' with '50'" in notes["procedure"]


def test_a_dialog_the_run_left_unanswered_is_in_its_hints():
    hints = notes_of("inf-linear-account-settings-20260219_022152-h4")["hints"]
    assert "s1: a dialog asked 'Disconnect account · Are you sure you want to disconnect your Figma account" in hints
    assert "(Cancel / Disconnect); the next step, click a 'Security & Access', was outside it" in hints


def test_a_long_message_keeps_what_happened_at_its_end():
    # the storefront's alert names the product first and says what happened to it last: cut at its end, the note
    # said 'Magnetic Metal ... Xbox One S/X Controller ha'
    hints = notes_of("wa-shopping-520")["hints"]
    said = next(line for line in hints.splitlines() if "the page said: Magnetic Metal" in line)
    assert "has been added to your Wish List." in said and len(said) < 400


def test_a_failed_step_is_followed_by_the_step_that_got_its_control_to_work():
    # the star radio's click timed out twice (a label intercepted it); pressing Space on the radio went through
    hints = notes_of("wa-shopping-587")["hints"].splitlines()
    failed = hints.index(next(line for line in hints if line.startswith("- s7 error on click LabelText '3 stars'")))
    assert hints[failed + 1] == "  then s8: press radio 'Rating 3 stars' with 'Space', with no error"
    assert sum("then s8:" in line for line in hints) == 1  # said once, after the last failure it got past
    # the report's Period select: a click on it failed, the arrow key worked
    admin = notes_of("wa-shopping_admin-0")["hints"]
    assert "  then s4: press combobox 'Period' with 'ArrowDown', with no error" in admin


def test_a_later_step_on_another_control_is_not_what_worked():
    # a failed click on 'My Account' is followed by clicks elsewhere: nothing is said to have worked for it
    hints = notes_of("wa-shopping-587")["hints"].splitlines()
    failed = hints.index(next(line for line in hints if line.startswith("- s0 error on click link 'My Account'")))
    assert not hints[failed + 1].startswith("  then")
