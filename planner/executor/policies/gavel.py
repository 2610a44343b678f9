"""Gavel's policies in rounds (Narayanan et al., OSDI 2020; ``scheduler/scheduler.py``'s
``simulate`` in its public simulator), on a cluster of several GPU types under the
``table`` model.

Gavel allocates time, not GPUs: its programs (:mod:`gavel_lp`) give every job (and,
packed, every pair of jobs) a share of time on each GPU type. Rounds of
:data:`ROUND` seconds realise the shares: at the start of a round every combination's
priority on a type is its share there over the share of that type's time it has had
since the last reset (a combination that has had none: its share times 1e9); per type,
in Gavel's order of types (V100, P100, K80; shuffled for the agnostic forms), the
combinations by priority, then deficit, then share, each takes its GPUs while the type
has them, a job at most once. Combinations with no share wait. A job keeps its GPUs
from one round to the next where it can (Gavel's lease). Every job of a round runs to
the round's end or its own (Gavel runs ``int(rate x round)`` steps: the round ends
when its last job does, and jobs that finish early leave their GPUs idle until then).
Jobs that arrive during a round wait for the next.

The allocation is computed again at a round's start once jobs have arrived or left,
and at least :data:`RESET` seconds after the last time it was (the first time at
once); then every combination's time is reset to half a round and what it lacked
becomes its deficit, as in Gavel.

Where this differs from Gavel's simulator: a job's steps are fractional (Gavel rounds
a round's steps down); a job whose partner of a pair finishes during a round runs
alone for the rest of it (Gavel keeps it at the pair's rate); the programs are solved
by HiGHS's interior-point method (Gavel: ECOS), whose solution inside a program's
optimal face may differ.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np

from planner.executor.model.jobs import Where
from planner.executor.model.policy import Chosen, Cluster, Context, JobState, Policy
from planner.executor.policies import gavel_lp

ROUND = 360.0
"""Seconds of a round (Gavel's ``time_per_iteration``; six minutes in its paper)."""

RESET = 1920.0
"""Least seconds between two allocations (Gavel's
``minimum_time_between_allocation_resets``)."""

GAVEL_TYPES = ("v100", "p100", "k80")
"""Gavel's order of GPU types when it fills a round."""

Combo = tuple[int, ...]


class GavelRounds(Policy):
    """One of Gavel's policies in rounds (see the module docstring).

    Parameters
    ----------
    policy
        ``fifo``, ``max_min_fairness``, ``min_total_duration``,
        ``finish_time_fairness`` or ``gandiva``.
    mode
        ``agnostic``, ``perf`` or ``packed`` (``gandiva`` is packed).
    seed
        Gavel's ``--seed``: its type shuffles and its random draws.
    round_seconds
        The length of a round.
    """

    ranks_classes = True
    needs_types = True

    def __init__(self, policy: str, mode: str, seed: int = 0, round_seconds: float = ROUND) -> None:
        self.policy, self.mode = policy, mode
        suffix = "" if mode == "agnostic" or policy == "gandiva" else f"_{mode}"
        self.name = f"gavel-{policy}{suffix}".replace("_", "-")
        self.round = round_seconds
        self.reset_every = RESET
        self.least_gain = 0.0
        self.eager = False
        self.isolated: dict[int, list[float]] = {}
        """Finish-time fairness: per job, its time in isolation so far, its steps left
        and its isolated throughput at the last allocation."""
        """Allocate anew at once where a round would leave every GPU idle (Gavel waits
        for the next arrival where one is coming)."""
        self.packing = mode == "packed" or policy == "gandiva"
        self.shuffle = mode == "agnostic" and policy != "gandiva"
        self.shuffler = random.Random(seed + 5)
        self.rng = random.Random(seed)
        self.fifo: dict[Combo, str] = {}
        self.gandiva: dict[int, tuple[Combo, int | None]] = {}

    def start(self, context: Context) -> None:
        """The cluster's types in Gavel's order, its GPUs per type, empty books."""
        super().start(context)
        assert context.model.table is not None  # the executor runs it on types only
        self.table = context.model.table
        present = list(dict.fromkeys(context.types))
        self.order = [t for t in GAVEL_TYPES if t in present] + sorted(
            t for t in present if t not in GAVEL_TYPES
        )
        self.sorted_types = sorted(present)
        self.workers = {t: context.types.count(t) * context.gpus_per_node for t in present}
        self.active: dict[int, JobState] = {}
        self.pending: list[JobState] = []
        self.book = _Book(self.sorted_types)
        self.worker_time = np.zeros(len(self.sorted_types))
        self.need = False
        self.last_reset = 0.0
        self.assigned: dict[Combo, Where] = {}
        self.previous: dict[Combo, Where] = {}
        self.round_start = 0.0
        self.round_end = math.inf
        self.spent: dict[Combo, float] = {}
        self.arrived: dict[int, float] = {}
        self.rates: dict[tuple[Combo, str], tuple[float, ...]] = {}

    # -- Gavel's bookkeeping --------------------------------------------------------

    def _rate(self, combo: Combo, gpu_type: str) -> tuple[float, ...]:
        """Steps per second of each member of ``combo`` on ``gpu_type``."""
        got = self.rates.get((combo, gpu_type))
        if got is None:
            jobs = [self.context.jobs[k] for k in combo]
            keys = [(j.model, j.gpus) for j in jobs]
            if len(keys) == 1:
                got = (self.table.alone.get(gpu_type, {}).get(keys[0], 0.0),)
            else:
                got = self.table.pair(gpu_type, keys[0], keys[1])
            self.rates[combo, gpu_type] = got
        return got

    def arrive(self, job: JobState) -> None:
        """The job waits for the next round."""
        self.pending.append(job)

    def finish(self, job: JobState, t: float) -> None:
        """Its combinations go (Gavel's ``_remove_job``); the allocation is due."""
        self.active.pop(job.idx, None)
        self.book.drop(job.idx)
        self.need = True

    def next_event(self) -> float:
        """The round's end."""
        return self.round_end

    def _add(self, job: JobState, t: float) -> None:
        """Gavel's ``add_job``: the job and (packed) its pairs with the jobs at hand."""
        k = job.idx
        half = self.round / 2
        pairs = []
        if self.packing:
            pairs = [
                (min(o, k), max(o, k))
                for o in self.active
                if self.context.jobs[o].gpus == job.job.gpus
            ]
            if self.least_gain > 0:
                pairs = [p for p in pairs if self._gain(p) >= self.least_gain]
        combos = [(k,), *pairs]
        ok = [[min(self._rate(c, g)) > 0 for g in self.sorted_types] for c in combos]
        self.book.add(combos, [half] + [0.0] * len(pairs), ok)
        self.active[k] = job
        self.arrived[k] = job.job.release
        self.need = True

    def _reset(self, t: float) -> None:
        """Gavel's ``_reset_time_run_so_far``: deficits from the time each combination
        lacked, every time back to half a round."""
        elapsed = t - self.last_reset
        half = self.round / 2
        book = self.book
        book.deficit = (book.deficit + book.share * elapsed) - (book.spent - half)
        book.spent[:] = half
        self.worker_time[:] = half * len(book.combos)
        self.last_reset = t

    def _snapshot(self, t: float) -> gavel_lp.Snapshot:
        """The jobs at hand for the programs."""
        jobs = sorted(self.active)
        types = self.sorted_types
        rate = np.array([[self._rate((k,), g)[0] for g in types] for k in jobs])
        pairs, pair_rate = [], []
        if self.packing:
            pos = {k: i for i, k in enumerate(jobs)}
            for combo in self.book.combos:
                if len(combo) == 2:
                    pairs.append((pos[combo[0]], pos[combo[1]]))
                    pair_rate.append([self._rate(combo, g) for g in types])
        return gavel_lp.Snapshot(
            jobs=jobs,
            types=types,
            workers=np.array([self.workers[g] for g in types], dtype=float),
            rate=rate,
            scale=np.array([self.context.jobs[k].gpus for k in jobs], dtype=float),
            weight=np.array([self.context.jobs[k].weight for k in jobs], dtype=float),
            remaining=np.array([max(self.active[k].remaining, 0.0) for k in jobs]),
            since=np.array([t - self.arrived[k] for k in jobs]),
            pairs=pairs,
            pair_rate=np.array(pair_rate).reshape(len(pairs), len(types), 2),
        )

    def _allocate(self, t: float) -> dict[Combo, dict[str, float]]:
        """The policy's allocation of the jobs at hand."""
        if not self.active:
            return {}
        if self.policy == "fifo":
            return self._fifo()
        if self.policy == "gandiva":
            return self._gandiva()
        snap = self._snapshot(t)
        shares = self.program(snap)
        return {c: dict(zip(snap.types, x.tolist(), strict=True)) for c, x in shares.items()}

    def program(self, snap: gavel_lp.Snapshot) -> dict[Combo, np.ndarray]:
        """The policy's program over the jobs at hand: the shares per combination."""
        if self.policy == "finish_time_fairness":
            return gavel_lp.finish_time_fairness(snap, self.mode, memory=self.isolated)
        solve: Callable[[gavel_lp.Snapshot, str], dict[Combo, np.ndarray]] = {
            "max_min_fairness": gavel_lp.max_min_fairness,
            "min_total_duration": gavel_lp.min_total_duration,
        }[self.policy]
        return solve(snap, self.mode)

    def _update_priorities(self, t: float) -> None:
        """Gavel's ``_update_priorities`` in simulation."""
        due = t - self.last_reset >= self.reset_every or self.last_reset == 0
        if self.need and due:
            self._reset(t)
            self.book.allot(self._allocate(t))
            self.need = False
        book = self.book
        total = self.worker_time[None, :]
        fraction = np.divide(book.spent, total, out=np.zeros_like(book.spent), where=total > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            priority = np.where(fraction > 0, book.share / fraction, book.share * 1e9)
        # no share (or no rate) on a type: priority 0 there
        self.priority = np.where((book.share > 0) & book.ok, priority, 0.0)

    # -- a round ----------------------------------------------------------------------

    def schedule(self, t: float, jobs: list[JobState], cluster: Cluster) -> Chosen:
        """During a round, its combinations still running; at its end, the next round
        (the arrivals added, the priorities and, when due, the allocation anew)."""
        if self.assigned and t < self.round_end - 1e-6:
            return self._running()
        idle = not self.assigned
        self._close_round(t)
        for job in self.pending:
            self._add(job, t)
        self.pending = []
        coming = any(j.job.release > t for j in self.context.state)
        if idle and not coming:
            self.last_reset = 0.0  # Gavel: nothing ran and nothing will arrive
        self._update_priorities(t)
        chosen = self._open_round(t, cluster)
        if not chosen and self.active and (self.eager or not coming):  # allocate anew
            self.need, self.last_reset = True, 0.0
            self._update_priorities(t)
            chosen = self._open_round(t, cluster)
            if not chosen:
                from planner.errors import InputError

                name = self.context.jobs[min(self.active)].name
                raise InputError(
                    f"{self.name} stalls at {t:,.0f} s: job {name!r} has shares only where it "
                    "cannot run (a GPU type without a measured rate for it), as Gavel's code "
                    "gives it"
                )
        return chosen

    def _close_round(self, t: float) -> None:
        """Credit every combination of the round that ends its time on its type."""
        column = {g: j for j, g in enumerate(self.sorted_types)}
        for combo, where in self.assigned.items():
            j = column[self.gpu_type(where)]
            spent = self.spent[combo]
            row = self.book.index.get(combo)
            if row is not None:
                self.book.spent[row, j] += spent
            self.worker_time[j] += spent
        self.previous = {c: w for c, w in self.assigned.items() if c in self.book.index}
        self.assigned = {}

    def _open_round(self, t: float, cluster: Cluster) -> Chosen:
        """Pick the combinations of the round and place them."""
        order = list(self.order)
        if self.shuffle:
            self.shuffler.shuffle(order)
        left = {g: cluster.free_of(g) for g in order} if cluster.down else dict(self.workers)
        taken: set[int] = set()
        picked: dict[str, list[Combo]] = {g: [] for g in order}
        fifo = self.policy == "fifo"
        book = self.book
        for gpu_type in order:
            j = self.sorted_types.index(gpu_type)
            # by priority, then deficit, then share, all descending; ties in Gavel's order
            rank = np.lexsort((-book.share[:, j], -book.deficit[:, j], -self.priority[:, j]))
            for row in rank.tolist():
                if left[gpu_type] == 0:
                    break
                combo = book.combos[row]
                if taken.intersection(combo) or not book.ok[row, j]:
                    continue
                if fifo and self.priority[row, j] <= 0:
                    continue
                scale = self.context.jobs[combo[0]].gpus
                if scale > left[gpu_type]:
                    continue
                left[gpu_type] -= scale
                taken.update(combo)
                picked[gpu_type].append(combo)
        cluster.empty()
        self.round_start, self.spent = t, {}
        chosen: Chosen = {}
        for gpu_type in order:
            combos = sorted(picked[gpu_type], key=lambda c: -self.context.jobs[c[0]].gpus)
            kept = [c for c in combos if self.previous.get(c) and self._keep(c, gpu_type, cluster)]
            for combo in combos:
                if combo in kept:
                    where = self.previous[combo]
                elif not book.known[book.index[combo]]:
                    continue
                else:
                    placed = cluster.place(self.context.jobs[combo[0]].gpus, gpu_type)
                    if placed is None:  # pragma: no cover - the round's GPUs were counted
                        continue
                    where = placed
                self.assigned[combo] = where
        for combo, where in self.assigned.items():
            chosen.update(self._entry(combo, where))
            rates = self._rate(combo, self.gpu_type(where))
            left = [self.active[k].remaining / r for k, r in zip(combo, rates, strict=True)]
            self.spent[combo] = min(self.round, max(left))
        self.round_end = t + max(self.spent.values()) if self.spent else math.inf
        return chosen

    def _keep(self, combo: Combo, gpu_type: str, cluster: Cluster) -> bool:
        """Whether ``combo`` can keep its GPUs of the last round (Gavel's lease)."""
        where = self.previous[combo]
        if self.gpu_type(where) != gpu_type:
            return False
        if any(cluster.free[k] < cluster.per_node or k in cluster.down for k, _ in where):
            return False  # a node no longer wholly free: placed anew
        for k, ids in where:
            cluster.free[k] -= len(ids)
        return True

    def _entry(self, combo: Combo, where: Where) -> Chosen:
        """The answer's entries of ``combo`` on ``where``."""
        members = [self.active[k] for k in combo if k in self.active]
        if len(members) == 1:
            return self.alone(members[0], where)
        return self.group(members, where)

    def _running(self) -> Chosen:
        """The round's combinations still running (a pair's survivor alone)."""
        chosen: Chosen = {}
        for combo, where in self.assigned.items():
            if any(k in self.active for k in combo):
                chosen.update(self._entry(combo, where))
        return chosen

    # -- Gavel's allocation-free policies -----------------------------------------------

    def _fifo(self) -> dict[Combo, dict[str, float]]:
        """Gavel's ``FIFOPolicy``: in arrival order, each job on a type with room (stock
        Gavel's agnostic form draws a type at random, then uses the last type of its
        list of types with room: it puts every job on that type, as here)."""
        jobs = sorted(self.active)
        scale = {k: self.context.jobs[k].gpus for k in jobs}
        available = {t: self.workers[t] for t in self.sorted_types}
        if self.mode != "agnostic":
            self.fifo = {}
        queue = [k for k in jobs if (k,) not in self.fifo]
        for combo in sorted(self.fifo):
            gpu_type = self.fifo[combo]
            if any(k not in self.active for k in combo):
                queue = sorted(queue + [k for k in combo if k in self.active])
                if queue:
                    k = queue.pop(0)
                    if scale[k] <= available[gpu_type]:
                        self.fifo[(k,)] = gpu_type
                        available[gpu_type] -= scale[k]
                del self.fifo[combo]
            else:
                available[gpu_type] -= scale[combo[0]]
        types = sorted(t for t in available if available[t] > 0)
        while queue and types:
            k = queue.pop(0)
            fits = [(i, t) for i, t in enumerate(types) if available[t] >= scale[k]]
            if not fits:
                break
            if self.mode == "agnostic":
                pick = self.rng.randrange(len(fits))
                gpu_type = types[-1]
            else:
                pick = max(range(len(fits)), key=lambda i: (self._rate((k,), fits[i][1])[0], -i))
                gpu_type = fits[pick][1]
            self.fifo[(k,)] = gpu_type
            available[gpu_type] -= scale[k]
            if available[gpu_type] == 0:
                types.pop(fits[pick][0])
        if self.mode == "packed":
            self._fifo_pack(queue)
        out = {c: dict.fromkeys(self.sorted_types, 0.0) for c in self.book.combos}
        for combo, gpu_type in self.fifo.items():
            out.setdefault(combo, dict.fromkeys(self.sorted_types, 0.0))[gpu_type] = 1.0
        return out

    def _fifo_pack(self, queue: list[int], threshold: float = 1.5) -> None:
        """Gavel's FIFO packing: the next waiting job joins the running job it packs
        best with, while their normalised pair throughput beats ``threshold``."""
        while queue:
            k = queue.pop(0)
            best, partner = threshold, None
            for combo, gpu_type in self.fifo.items():
                if len(combo) > 1 or self.context.jobs[combo[0]].gpus != self.context.jobs[k].gpus:
                    continue
                pair = (min(combo[0], k), max(combo[0], k))
                rates = self._rate(pair, gpu_type)
                alone = [self._rate((m,), gpu_type)[0] for m in pair]
                total = sum(r / a for r, a in zip(rates, alone, strict=True) if r > 0)
                if total > best:
                    best, partner = total, combo
            if partner is None:
                break
            gpu_type = self.fifo.pop(partner)
            self.fifo[(min(partner[0], k), max(partner[0], k))] = gpu_type

    def _gandiva(self) -> dict[Combo, dict[str, float]]:
        """Gavel's ``GandivaPolicy``: equal shares; when the jobs ask for more GPUs than
        the cluster has, random pairs of one GPU count share."""
        jobs = sorted(self.active)
        scale = {k: self.context.jobs[k].gpus for k in jobs}
        for k in list(self.gandiva):
            if k not in self.gandiva:
                continue
            combo, other = self.gandiva[k]
            gone = k not in self.active or (other is not None and other not in self.active)
            if gone or (len(combo) > 1 and self._packed_gain(combo) < 1.0):
                self.gandiva.pop(k, None)
                if other is not None:
                    self.gandiva.pop(other, None)
        if sum(scale.values()) <= sum(self.workers.values()):
            combos = [(k,) for k in jobs]
        else:
            free = [k for k in jobs if k not in self.gandiva]
            n, i = len(free), 0
            while len(free) > 1 and i < n:
                i += 1
                a, b = self.rng.sample(free, 2)
                if scale[a] != scale[b]:
                    continue
                free.remove(a)
                free.remove(b)
                combo = (min(a, b), max(a, b))
                self.gandiva[a], self.gandiva[b] = (combo, b), (combo, a)
            for k in free:
                self.gandiva[k] = ((k,), None)
            combos = list(dict.fromkeys(c for c, _ in self.gandiva.values()))
        out = {c: dict.fromkeys(self.sorted_types, 0.0) for c in self.book.combos}
        m = len(combos)
        for combo in combos:
            row = {t: self.workers[t] / m / scale[combo[0]] for t in self.sorted_types}
            total = max(sum(row.values()), 1.0)
            out[combo] = {t: v / total for t, v in row.items()}
        return out

    def _gain(self, pair: Combo) -> float:
        """A pair's best sum of normalised rates over the types (0: it cannot share)."""
        best = 0.0
        for gpu_type in self.sorted_types:
            rates = self._rate(pair, gpu_type)
            alone = [self._rate((k,), gpu_type)[0] for k in pair]
            if min(rates) > 0 and min(alone) > 0:
                best = max(best, sum(r / a for r, a in zip(rates, alone, strict=True)))
        return best

    def _packed_gain(self, combo: Combo) -> float:
        """Gavel's normalised throughput of a pair, summed over the types."""
        total = 0.0
        for gpu_type in self.sorted_types:
            rates = self._rate(combo, gpu_type)
            for k, r in zip(combo, rates, strict=True):
                if r <= 0:
                    return 0.0
                total += r / self._rate((k,), gpu_type)[0]
        return total


class _Book:
    """Every combination's time on each type since the last reset, deficit, share and
    whether it can run there (a rate on that type), one row per combination in the
    order Gavel's dictionaries hold them."""

    def __init__(self, types: list[str]) -> None:
        self.types = types
        self.combos: list[Combo] = []
        self.index: dict[Combo, int] = {}
        width = len(types)
        self.spent = np.zeros((0, width))
        self.deficit = np.zeros((0, width))
        self.share = np.zeros((0, width))
        self.ok = np.zeros((0, width), dtype=bool)
        self.known = np.zeros(0, dtype=bool)
        """Whether the allocation holds the combination (else it is never placed anew)."""

    def add(self, combos: list[Combo], spent: list[float], ok: list[list[bool]]) -> None:
        """New combinations, their time so far on every type ``spent``."""
        width = len(self.types)
        for combo in combos:
            self.index[combo] = len(self.combos)
            self.combos.append(combo)
        rows = len(combos)
        self.spent = np.vstack([self.spent, np.repeat(np.array(spent)[:, None], width, 1)])
        self.deficit = np.vstack([self.deficit, np.zeros((rows, width))])
        self.share = np.vstack([self.share, np.zeros((rows, width))])
        self.ok = np.vstack([self.ok, np.array(ok, dtype=bool).reshape(rows, width)])
        self.known = np.append(self.known, np.zeros(rows, dtype=bool))

    def drop(self, job: int) -> None:
        """Every combination of ``job``."""
        keep = np.array([job not in c for c in self.combos], dtype=bool)
        self.combos = [c for c, k in zip(self.combos, keep, strict=True) if k]
        self.index = {c: i for i, c in enumerate(self.combos)}
        self.spent, self.deficit = self.spent[keep], self.deficit[keep]
        self.share, self.ok, self.known = self.share[keep], self.ok[keep], self.known[keep]

    def allot(self, allocation: dict[Combo, dict[str, float]]) -> None:
        """Take the shares of a new allocation."""
        self.share[:] = 0.0
        self.known[:] = False
        for combo, shares in allocation.items():
            row = self.index.get(combo)
            if row is not None:
                self.share[row] = [shares.get(t, 0.0) for t in self.types]
                self.known[row] = True


GAVEL_POLICIES = {
    f"gavel-{policy.replace('_', '-')}{'' if mode == 'agnostic' else '-' + mode}": (policy, mode)
    for policy in ("fifo", "max_min_fairness", "min_total_duration", "finish_time_fairness")
    for mode in ("agnostic", "perf", "packed")
} | {"gavel-gandiva": ("gandiva", "packed")}
"""Gavel's policies by name: (its policy, its form)."""


def _gavel_class(name: str, policy: str, mode: str) -> type[GavelRounds]:
    """A class of one of Gavel's policies, made without arguments as policies are."""

    def init(self: GavelRounds, seed: int = 0, round_seconds: float = ROUND) -> None:
        GavelRounds.__init__(self, policy, mode, seed, round_seconds)

    doc = f"Gavel's ``{policy}`` ({mode}) in rounds: :class:`GavelRounds`."
    cls_name = "Gavel" + "".join(w.title() for w in name.split("-")[1:])
    return type(cls_name, (GavelRounds,), {"__init__": init, "__doc__": doc})


GAVEL_CLASSES: dict[str, type[GavelRounds]] = {
    name: _gavel_class(name, policy, mode) for name, (policy, mode) in GAVEL_POLICIES.items()
}
"""A policy class per name of :data:`GAVEL_POLICIES`."""
