"""Work spread over worker processes, with results in input order: what `import --jobs` and `replay --jobs`
share. Standard library only; it knows nothing of the ledger.

`Workers(1)` runs every task here, in order, as a plain loop. `Workers(n)` starts n processes when entered
(forked on Linux, so a worker starts at once with the parent's modules; callers enter it before opening a
connection, which a forked child must never share) and hands them at most `ahead` tasks (or batches of small
tasks) at a time, so a corpus of any size holds a bounded number of tasks and results in memory. A task's
exception is raised here, in input order, when its turn comes: the first failing task in input order is the
one reported, whatever the order in which the workers finished.

Workers ignore SIGINT and SIGTERM. Ctrl-C at a terminal signals the whole process group, and a service
manager's stop (systemd's SIGTERM) the whole control group; only the parent decides what it means (it rolls
its transaction back and leaves), and leaving the `with` block stops every worker (tasks already running
finish first: each is small). Both are blocked while the workers are forked, so none can arrive in the moment
before a worker has started ignoring it.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from multiprocessing.context import BaseContext
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


STOPS = {signal.SIGINT, signal.SIGTERM}


def _ignore_interrupts() -> None:
    for stop in STOPS:
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _start_method() -> BaseContext:
    # fork: a worker needs no start-up (it has the parent's modules), and it is entered before any connection
    # exists. Elsewhere (macOS, Windows) fork is unsafe or absent: the platform's default, slower to start.
    return multiprocessing.get_context("fork" if sys.platform == "linux" else None)


class Workers:
    """A context manager: `map` runs tasks here (jobs <= 1) or in `jobs` worker processes."""

    def __init__(self, jobs: int, ahead: int | None = None):
        self.jobs = max(1, jobs)
        self.ahead = ahead or 2 * self.jobs + 2  # enough to keep every worker busy while one result waits
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        if self.jobs > 1:
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
            try:
                self._executor = ProcessPoolExecutor(self.jobs, mp_context=_start_method(),
                                                     initializer=_ignore_interrupts)
                self._executor.submit(int).result()  # starts the processes now, with both blocked
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def map(self, function: Callable[[T], R], tasks: Iterable[T], weight: Callable[[T], int] | None = None,
            load: int = 0) -> Iterator[R]:
        """`function(task)` for every task, in input order. `function` and the tasks must pickle when jobs > 1.
        Raises whatever a task raised, when its turn comes (every result before it yielded first).

        With `weight`, consecutive tasks go to a worker together until their weights reach `load` (0: one
        task at a time): each round trip costs the parent a submission, a wake-up and a result to unpickle."""
        if self._executor is None:
            for task in tasks:
                yield function(task)
            return
        if weight is None:
            yield from self._in_order(function, tasks)
            return
        for results, failure in self._in_order(partial(_run_batch, function), _batches(tasks, weight, load)):
            yield from results
            if failure is not None:
                raise failure

    def _in_order(self, function: Callable[[T], R], tasks: Iterable[T]) -> Iterator[R]:
        assert self._executor is not None  # map runs here only with workers
        executor = self._executor
        pending: deque[Future[R]] = deque()
        remaining = iter(tasks)
        for task in remaining:
            pending.append(executor.submit(function, task))
            if len(pending) >= self.ahead:
                break
        while pending:
            oldest = pending.popleft()
            for task in remaining:  # one in, one out: the window stays full while the oldest is awaited
                pending.append(executor.submit(function, task))
                break
            yield oldest.result()


def _batches(tasks: Iterable[T], weight: Callable[[T], int], load: int) -> Iterator[list[T]]:
    batch: list[T] = []
    held = 0
    for task in tasks:
        batch.append(task)
        held += weight(task)
        if held >= load:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _run_batch(function: Callable[[T], R], batch: list[T]) -> tuple[list[R], Exception | None]:
    """`function` over a batch in a worker, in order, up to the first task that raises: the results before
    it, and its exception, which the parent raises once it has yielded them."""
    results = []
    for task in batch:
        try:
            results.append(function(task))
        except Exception as exc:  # noqa: BLE001 -- handed to the parent, which raises it in its turn
            return results, exc
    return results, None
