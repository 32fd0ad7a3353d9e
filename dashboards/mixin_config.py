"""The mixin's configuration: config.yml, with a profile (profiles/NAME.yml) merged over it.

A profile may only set keys config.yml has (a typo fails instead of being ignored); durations
are checked against Prometheus's duration syntax. Errors raise ConfigError naming the file.
"""

import pathlib
import re

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT = HERE / "config.yml"
PROFILES = HERE / "profiles"

UNITS = [("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
DURATION_RE = re.compile("".join(r"(?:(\d+)%s)?" % u for u, _ in UNITS))
WORDS = {"y": "year", "w": "week", "d": "day", "h": "hour", "m": "minute", "s": "second"}


class ConfigError(Exception):
    pass


class Duration:
    """A Prometheus duration, whole seconds (rule windows and for: need no milliseconds)."""

    def __init__(self, seconds):
        self.seconds = seconds

    @classmethod
    def parse(cls, text, where):
        m = DURATION_RE.fullmatch(str(text)) if text not in (None, "") else None
        if not m:
            raise ConfigError(f"{where}: {text!r} is not a duration like 30s, 5m, 1h30m")
        return cls(sum(int(n) * s for n, (_, s) in zip(m.groups(), UNITS) if n))

    def parts(self):
        left, out = self.seconds, []
        for unit, size in UNITS:
            if left >= size:
                out.append((left // size, unit))
                left %= size
        return out

    def __str__(self):
        """Canonical Prometheus form: 30m, 1h30m, 0s."""
        return "".join(f"{n}{u}" for n, u in self.parts()) or "0s"

    def words(self):
        """For annotations: "30 minutes", "1 hour 30 minutes"."""
        return " ".join(f"{n} {WORDS[u]}{'' if n == 1 else 's'}" for n, u in self.parts()) \
            or "0 seconds"


def _merge(base, over, where, path=""):
    out = dict(base)
    for key, value in over.items():
        if key not in base:
            raise ConfigError(f"{where}: unknown key {path}{key} (known: {', '.join(base)})")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {path}{key} must be a mapping")
            out[key] = _merge(base[key], value, where, f"{path}{key}.")
        else:
            out[key] = value
    return out


def _read(path):
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {e}") from e
    if not isinstance(doc, dict) or set(doc) != {"_config"} or not isinstance(doc["_config"], dict):
        raise ConfigError(f"{path}: expected one top-level key, _config, holding a mapping")
    return doc["_config"]


class Config:
    """windows: name -> Duration; for_: alert name -> Duration; profile: None or its name."""

    def __init__(self, raw, profile, where):
        self.profile = profile
        self.windows = {k: Duration.parse(v, f"{where}: windows.{k}")
                        for k, v in raw["windows"].items()}
        for k, d in self.windows.items():
            if d.seconds == 0:
                raise ConfigError(f"{where}: windows.{k} must be longer than 0s")
        self.for_ = {k: Duration.parse(v, f"{where}: for.{k}") for k, v in raw["for"].items()}

    def window(self, name):
        return self.windows[name]

    def for_of(self, alert):
        if alert not in self.for_:
            raise ConfigError(f"config.yml: for.{alert} missing")
        return self.for_[alert]


def load(profile=None):
    """The default configuration, or a profile (a path, or a name under profiles/) over it."""
    raw = _read(DEFAULT)
    for key in ("windows", "for"):
        if not isinstance(raw.get(key), dict):
            raise ConfigError(f"{DEFAULT}: _config.{key} must be a mapping")
    if profile is None:
        return Config(raw, None, str(DEFAULT))
    path = pathlib.Path(profile)
    if not path.suffix:
        path = PROFILES / f"{profile}.yml"
    merged = _merge(raw, _read(path), str(path))
    return Config(merged, path.stem, str(path))


def profiles():
    """Names of the shipped profiles (profiles/*.yml), sorted."""
    return sorted(p.stem for p in PROFILES.glob("*.yml"))
