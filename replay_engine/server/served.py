"""What every route of one app shares: the engine, the scenario it reports, the provider
catalog, the reload source, the no-retry headers of model-route errors and the per-run
overflow handlers (who answers calls past the recording instead of a binding error)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp

from ..engine import DEFAULT_RUN, ReplayEngine
from ..errors import BindingError
from ..models import ModelConfig, ProviderConfig
from ..scenario.loading import Scenario
from .calls import StreamCount
from .preamble import NO_RETRY

DEFAULT_PROVIDERS = [ProviderConfig(id="replay", models=[ModelConfig(id="replay")])]
"""What ``/v1/models`` lists when no provider catalog is configured."""

ScenarioSource = Scenario | Callable[[], Scenario | None] | None
"""What the scripts route reports headers from: a scenario, a callable returning the current
one (asked on every request), or nothing."""


@dataclass(frozen=True, slots=True)
class Overflowed:
    """A model call past the recording that a run's overflow handler answers instead of the
    binding error (which the engine did not count as a refusal)."""

    request: Request
    route: str
    """The route template it came in on (``/v1/chat/completions``)."""
    dialect: str
    """The wire dialect's name."""
    session: str | None
    raw: bytes
    """The request body as sent."""
    body: dict[str, Any]
    error: BindingError


OverflowHandler = Callable[[Overflowed], ASGIApp]
"""Answers an overflowed call (e.g. forwards it upstream through a recorder)."""


class Served:
    """The serving context of one app (``create_app``)."""

    def __init__(self, engine: ReplayEngine, scenario: ScenarioSource,
                 providers: list[ProviderConfig] | None,
                 reload: Callable[[], object] | None, sdk_retries: bool = False) -> None:
        self.engine = engine
        self.no_retry: dict[str, str] = {} if sdk_retries else NO_RETRY
        self.no_retry_raw = [(k.encode(), v.encode()) for k, v in self.no_retry.items()]
        self.providers = providers if providers else DEFAULT_PROVIDERS
        self.reload_fn = reload
        self.streams = StreamCount()
        self.overflow: dict[str, tuple[OverflowHandler, frozenset[str]]] = {}
        """Per run: who answers its calls past the recording, on which wires (``set_overflow``)."""
        self._scenario: Scenario | None = None
        self._provider: Callable[[], Scenario | None] | None = None
        self.set_scenario(scenario)

    def set_scenario(self, scenario: ScenarioSource) -> None:
        """Serve ``scenario`` (or whatever a provider callable returns) from now on."""
        if callable(scenario):
            self._scenario, self._provider = None, scenario
        else:
            self._scenario, self._provider = scenario, None

    def reloaded(self, result: object) -> None:
        """Keep a scenario a reload returned (unless a provider callable says what is served)."""
        if isinstance(result, Scenario) and self._provider is None:
            self._scenario = result

    @property
    def scenario(self) -> Scenario | None:
        """The scenario as last told (a provider is asked every time)."""
        return self._provider() if self._provider is not None else self._scenario

    def set_overflow(self, run: str, handler: OverflowHandler | None,
                     dialects: frozenset[str] = frozenset()) -> None:
        """Answer ``run``'s calls past the recording on the ``dialects`` wires with ``handler``
        instead of a binding error (None: refuse them again); the engine then does not count
        them as refused."""
        if handler is None or not dialects:
            self.overflow.pop(run, None)
            dialects = frozenset()
        else:
            self.overflow[run] = (handler, dialects)
        self.engine.configure_run(run, overflow=dialects)

    @staticmethod
    def run(request: Request) -> str:
        """The run a request addresses (``/runs/{run}/…``, else the default run)."""
        return str(request.path_params.get("run", DEFAULT_RUN))
