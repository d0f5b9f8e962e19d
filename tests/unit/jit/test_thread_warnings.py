"""tdsl's compile collects its own warnings per thread (``tdsl.errors.collecting_warnings``),
never through ``warnings.catch_warnings``, which swaps the process-wide filters: a compile
in one thread recorded another thread's warnings and re-raised them as its own, and the
other thread's "error" filter did not hold while it ran (found by fuzzing)."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

import tdsl
from tdsl.errors import TdslWarning, collecting_warnings, warn


def test_collecting_is_local_to_the_thread() -> None:
    inside, done = threading.Event(), threading.Event()
    raised: list[BaseException] = []

    def other() -> None:
        inside.wait()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                warn(TdslWarning("from the other thread"))
        except TdslWarning as err:
            raised.append(err)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with collecting_warnings(hold=(TdslWarning,)) as seen:
        inside.set()
        done.wait(10)
        warn(TdslWarning("from this thread"))
    thread.join()
    assert [str(w) for w in seen] == ["from this thread"]  # held back, and only its own
    assert [str(e) for e in raised] == ["from the other thread"]  # its filter held


def test_collectors_nest_and_hold_for_every_level() -> None:
    with collecting_warnings(hold=(TdslWarning,)) as outer, collecting_warnings() as inner:
        warn(TdslWarning("held by the outer block"))
    assert len(outer) == len(inner) == 1


def test_the_library_never_swaps_the_process_wide_filters() -> None:
    # (the command-line tools own their process: they may)
    root = Path(tdsl.__file__).parent
    users = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "catch_warnings(" in p.read_text() and p.parent.name != "tools"
    )
    assert users == [], users


@pytest.mark.parametrize("target", ["native", "auto"])
def test_a_compile_does_not_take_another_threads_warning(target: str) -> None:
    """While compiles run, another thread's warnings raise there, under its own filter,
    and no compile raises them."""
    stop = threading.Event()
    outcome = {"raised there": 0, "not raised": 0}

    def other() -> None:  # (the suite's filters make a UserWarning an error)
        while not stop.is_set():
            try:
                warnings.warn("from the other thread", UserWarning, stacklevel=1)
                outcome["not raised"] += 1
            except UserWarning:
                outcome["raised there"] += 1
            # thousands of warnings over the compiles, not a loop that takes the GIL half
            # the time (it doubled the compiles' time; a compile that swapped the filters
            # still meets hundreds of the warnings)
            stop.wait(0.0001)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        jit = tdsl.JITTensorKernel(target=target)
        for i in range(12):
            jit.compile(f"softmax(relu(A) * {i + 1}.0 + B)", dict.fromkeys("AB", (16, 24)), "f32")
    finally:
        stop.set()
        thread.join()
    assert outcome["not raised"] == 0 and outcome["raised there"] > 0
