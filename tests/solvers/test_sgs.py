"""Schedule generation: compiled kernels against the plain-Python reference, rules, failures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner import load_instance, validate
from planner.arrays import OK
from planner.errors import InputError
from planner.model import CapacityWindow, Job, Mode, Precedence, Problem, Resource, Segment, Task
from planner.result import Status
from planner.solvers import solve
from planner.solvers.capacity_numba import SKYLINE, TICKS
from planner.solvers.passes_numba import keys_to_order
from planner.solvers.sgs import RULES, Decoder, parallel_sgs, priorities, serial_sgs
from tests.solvers.sgs_reference import parallel_reference, serial_reference

INSTANCES = Path(__file__).resolve().parents[2] / "instances"
FILES = ["psplib/j301_1.sm", "psplib/j1201_1.sm", "mm/j1010_1.mm", "mm/j102_2.mm"]


def random_problem(seed: int) -> Problem:
    """A small instance using the whole model: segments, windows, lags, windows, budgets, jobs."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    res = ["a", "b"]
    windows = [CapacityWindow(start=3, end=7, capacity=1)] if rng.random() < 0.5 else []
    resources = [
        Resource(name="a", capacity=3, windows=windows),
        Resource(name="b", capacity=2),
        Resource(name="money", capacity=int(rng.integers(n, 3 * n)), kind="nonrenewable"),
    ]
    jobs = [Job(name="j0", colocate=True), Job(name="j1")]
    tasks = []
    for i in range(n):
        modes = []
        for m in range(int(rng.integers(1, 4))):
            segs = [
                Segment(
                    duration=int(rng.integers(0, 4)),
                    demand={r: int(rng.integers(0, 3)) for r in res if rng.random() < 0.7},
                )
                for _ in range(int(rng.integers(1, 3)))
            ]
            modes.append(
                Mode(
                    segments=segs,
                    consumes={"money": int(rng.integers(0, 4))},
                    placement=str(rng.choice(["n1", "n2"])) if rng.random() < 0.5 else None,
                    name=f"m{m}",
                )
            )
        tasks.append(
            Task(
                name=f"t{i}",
                job=str(rng.choice(["j0", "j1"])) if rng.random() < 0.7 else None,
                modes=modes,
                release=int(rng.integers(0, 4)) if rng.random() < 0.3 else 0,
                deadline=int(rng.integers(12, 40)) if rng.random() < 0.2 else None,
            )
        )
    precs = []
    for i in range(1, n):
        for b in set(rng.integers(0, i, int(rng.integers(0, 3))).tolist()):
            precs.append(
                Precedence(
                    before=f"t{b}",
                    after=f"t{i}",
                    kind=str(rng.choice(["FS", "SS"])),
                    lag=int(rng.integers(0, 3)),
                )
            )
    return Problem(resources=resources, tasks=tasks, precedences=precs, jobs=jobs)


def _compare(problem: Problem, rng: np.random.Generator, reps: int, capacity: int) -> int:
    """Run kernels (on a ``capacity`` profile) and reference on random lists; return how
    many passes succeeded."""
    dec = Decoder(problem, capacity)
    d = dec.data
    counts = np.diff(d.mode_start)
    ok = 0
    for _ in range(reps):
        order = dec.order(rng.random(d.n))
        random_modes = d.mode_start[:-1] + (rng.random(d.n) * counts).astype(np.int64)
        pref = np.where(rng.random(d.n) < 0.5, -1, random_modes)
        for parallel, ref in ((False, serial_reference), (True, parallel_reference)):
            status, task = dec.run(order, pref, parallel=parallel)
            expect = ref(problem, order.tolist(), pref.tolist())
            assert (status, task) == expect[:2]
            if status == OK:
                ok += 1
                np.testing.assert_array_equal(dec.start, expect[2])
                np.testing.assert_array_equal(dec.mode, expect[3])
                assert validate(problem, dec.schedule()).ok
                before = dec.objective()
                dec.justify()
                assert dec.objective() <= before
                assert validate(problem, dec.schedule()).ok
    return ok


CAPACITY = pytest.mark.parametrize("capacity", [TICKS, SKYLINE], ids=["ticks", "skyline"])


@CAPACITY
@pytest.mark.parametrize("seed", range(40))
def test_kernels_match_reference_on_random_instances(seed: int, capacity: int) -> None:
    _compare(random_problem(seed), np.random.default_rng(seed), reps=3, capacity=capacity)


def test_random_instances_exercise_success_and_failure() -> None:
    # The generator must produce both feasible passes and deadline/budget failures.
    outcomes = [
        _compare(random_problem(s), np.random.default_rng(s), reps=3, capacity=TICKS)
        for s in range(40)
    ]
    assert sum(outcomes) > 40
    assert min(outcomes) == 0


@CAPACITY
@pytest.mark.parametrize("name", FILES)
def test_kernels_match_reference_on_psplib(name: str, capacity: int) -> None:
    rng = np.random.default_rng(1)
    assert _compare(load_instance(INSTANCES / name), rng, reps=2, capacity=capacity) > 0


@pytest.mark.parametrize("name", FILES)
def test_skyline_and_per_tick_profiles_give_the_same_schedules(name: str) -> None:
    # The same lists through both forms of the capacity profile, justification included.
    problem = load_instance(INSTANCES / name)
    ticks, sky = Decoder(problem, TICKS), Decoder(problem, SKYLINE)
    assert (ticks.index[0], sky.index[0]) == (TICKS, SKYLINE)
    rng = np.random.default_rng(5)
    compared = 0
    for _ in range(5):
        order = ticks.order(rng.random(ticks.data.n))
        for parallel in (False, True):
            outcomes = [dec.run(order, parallel=parallel) for dec in (ticks, sky)]
            assert outcomes[0] == outcomes[1]
            if outcomes[0] != (OK, -1):
                continue  # a budget unmet by this list, in both forms alike
            assert ticks.justify() == sky.justify()
            np.testing.assert_array_equal(ticks.start, sky.start)
            np.testing.assert_array_equal(ticks.mode, sky.mode)
            compared += 1
    assert compared > 0


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_gives_a_valid_schedule(rule: str) -> None:
    problem = load_instance(INSTANCES / "psplib/j1201_1.sm")
    for sgs in (serial_sgs, parallel_sgs):
        schedule, why = sgs(problem, priorities(problem, rule))
        assert why == ""
        assert validate(problem, schedule).ok
        assert schedule.makespan(problem) >= 99  # the MPM-Time of j1201_1


def test_solve_sgs_through_registry() -> None:
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    plain = solve(problem, "sgs", rule="lft")
    justified = solve(problem, "sgs", rule="lft", justify=True)
    assert plain.valid and justified.valid
    assert plain.stats["schedules"] == 1 and justified.stats["schedules"] == 3
    assert 43 <= justified.objective <= plain.objective  # 43: the optimum of j301_1


def test_unknown_rule_and_scheme() -> None:
    problem = load_instance(INSTANCES / "psplib/j301_1.sm")
    with pytest.raises(InputError, match=r"^option 'rule' of solver 'sgs' must be lft \| lst"):
        solve(problem, "sgs", rule="nope")
    with pytest.raises(
        InputError, match=r"^option 'scheme' of solver 'sgs' must be serial \| parallel"
    ):
        solve(problem, "sgs", scheme="nope")
    with pytest.raises(InputError, match=r"^unknown priority rule 'nope'; choose one of lft, lst"):
        priorities(problem, "nope")


def _tight_deadline() -> Problem:
    # Both tasks need the whole resource; the one taken second misses its deadline.
    seg = Segment(duration=5, demand={"r": 1})
    return Problem(
        resources=[Resource(name="r", capacity=1)],
        tasks=[
            Task(name="x", modes=[Mode(segments=[seg])], deadline=5),
            Task(name="y", modes=[Mode(segments=[seg])], deadline=5),
        ],
    )


def test_missed_deadline_gives_no_schedule_and_a_reason() -> None:
    res = solve(_tight_deadline(), "sgs")
    assert res.schedule is None
    assert res.status == Status.UNKNOWN
    assert "deadline" in res.reason


def test_colocation_and_budget_hold() -> None:
    # Two colocated tasks: the cheap mode of each is on a different node.
    def task(name: str, cheap: str) -> Task:
        return Task(
            name=name,
            job="J",
            modes=[
                Mode(name="cheap", segments=[Segment(duration=3)], placement=cheap),
                Mode(
                    name="dear",
                    segments=[Segment(duration=1)],
                    placement="n1" if cheap == "n2" else "n2",
                    consumes={"B": 2},
                ),
            ],
        )

    problem = Problem(
        resources=[Resource(name="B", capacity=2, kind="nonrenewable")],
        tasks=[task("a", "n1"), task("b", "n2")],
        jobs=[Job(name="J", colocate=True)],
    )
    res = solve(problem, "sgs")
    assert res.valid
    nodes = {problem.task(t).mode(m).placement for t, m in res.schedule.modes.items()}
    assert len(nodes) == 1


def _order_oracle(problem: Problem, keys: list, reverse: bool) -> list[int]:
    """At each step the eligible task of smallest (key, number): plain Python."""
    index = {t.name: i for i, t in enumerate(problem.tasks)}
    before = {i: set() for i in range(len(problem.tasks))}
    for p in problem.precedences:
        a, b = index[p.before], index[p.after]
        if reverse:
            a, b = b, a
        before[b].add(a)
    done: list[int] = []
    while len(done) < len(problem.tasks):
        ready = [i for i in before if i not in done and before[i] <= set(done)]
        done.append(min(ready, key=lambda i: (keys[i], i)))
    return done


@pytest.mark.parametrize("seed", range(30))
def test_keys_to_order_takes_the_eligible_task_of_least_key(seed: int) -> None:
    # Keys with many ties (as the start and finish times of a justification pass, where
    # a sort by key alone would break precedences) and without.
    problem = random_problem(seed)
    dec = Decoder(problem)
    rng = np.random.default_rng(seed)
    for keys in (rng.integers(0, 3, dec.data.n), rng.random(dec.data.n)):
        for reverse in (False, True):
            got = keys_to_order(dec.data, keys, reverse).tolist()
            assert got == _order_oracle(problem, keys.tolist(), reverse)
