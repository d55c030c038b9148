"""What every route of one app shares: the engine, the scenario it reports, the provider
catalog and the models requests named, the reload source, the no-retry headers of
model-route errors, the wire options, the responses each run served and the per-run
overflow handlers (who answers calls past the recording instead of a binding error)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp

from ..engine import DEFAULT_RUN, ReplayEngine
from ..engine import events as ev
from ..errors import BindingError
from ..models import ModelConfig, ProviderConfig
from ..scenario.loading import Scenario
from ..wire.dialect import Kept, WireOptions
from .calls import StreamCount
from .preamble import NO_RETRY

DEFAULT_PROVIDERS = [ProviderConfig(id="replay", models=[ModelConfig(id="replay")])]
"""What ``/v1/models`` lists when no provider catalog is configured (with the named models)."""
MAX_NAMED_MODELS = 1000
"""Model ids requests named that ``/v1/models`` lists without a catalog (the first ones)."""
MAX_MODEL_ID = 256
"""Longer model ids are answered but not listed."""

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


ReloadSource = Callable[[], object] | Callable[[], Awaitable[object]]
"""What ``POST /replay/v1/reload`` calls: it reloads the engine and returns the scenario; an
async one loads off the event loop (``runner.reload_scenario``) so streams are not held."""

OverflowHandler = Callable[[Overflowed], ASGIApp]
"""Answers an overflowed call (e.g. forwards it upstream through a recorder)."""


class KeptAnswers:
    """Answers each run served that a client can fetch again by id (``GET /v1/responses/{id}``):
    the newest ``limit`` per run (the engine's journal limit), dropped with the run's journal
    when the run is reset or deleted."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.engine = engine
        self._runs: dict[str, OrderedDict[str, Callable[[], dict[str, Any]]]] = {}
        self._watching = False

    def keep(self, run: str, kept: Kept) -> None:
        """Keep one served answer of ``run`` (the oldest kept one goes beyond the limit)."""
        if not self._watching:  # only apps that keep anything follow resets
            self._watching = True
            self.engine.subscribe(self._on_event, chunks=False)
        answers = self._runs.setdefault(run, OrderedDict())
        answers[kept.id] = kept.render
        while len(answers) > self.engine.journal_limit:
            answers.popitem(last=False)

    def get(self, run: str, answer_id: str) -> dict[str, Any] | None:
        """The answer as it stands now, or None when the run did not serve it (or let it go)."""
        answers = self._runs.get(run)
        render = answers.get(answer_id) if answers is not None else None
        return render() if render is not None else None

    def _on_event(self, event: ev.EngineEvent) -> None:
        if isinstance(event, ev.RunReset | ev.RunForgotten):
            self._runs.pop(event.run, None)


class Served:
    """The serving context of one app (``create_app``)."""

    def __init__(self, engine: ReplayEngine, scenario: ScenarioSource,
                 providers: list[ProviderConfig] | None,
                 reload: ReloadSource | None, sdk_retries: bool = False,
                 wire: WireOptions | None = None) -> None:
        self.engine = engine
        self.no_retry: dict[str, str] = {} if sdk_retries else NO_RETRY
        self.no_retry_raw = [(k.encode(), v.encode()) for k, v in self.no_retry.items()]
        self.catalog = bool(providers)
        """A provider catalog was configured (else any model id is answered)."""
        self.providers = providers if providers else DEFAULT_PROVIDERS
        self.named_models: dict[str, None] = {}
        """Model ids requests named, in first-named order (at most ``MAX_NAMED_MODELS``)."""
        self.wire = wire or WireOptions()
        self.answers = KeptAnswers(engine)
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

    def named(self, model: str | None) -> None:
        """Note a model id a request named (what ``/v1/models`` lists without a catalog)."""
        if (model and len(model) <= MAX_MODEL_ID and model not in self.named_models
                and len(self.named_models) < MAX_NAMED_MODELS):
            self.named_models[model] = None

    @staticmethod
    def run(request: Request) -> str:
        """The run a request addresses (``/runs/{run}/…``, else the default run)."""
        return str(request.path_params.get("run", DEFAULT_RUN))
