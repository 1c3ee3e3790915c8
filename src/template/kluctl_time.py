"""The `time` global of Kluctl templates (docs/kluctl/templating/functions.md, time.now() and following)."""

import datetime
import functools
import zoneinfo

# Deltas are whole microseconds, as in Kluctl: `time.now() + time.second * 10`.
_SECOND = 1_000_000


def time_global():
    """The value of the `time` global: constructors and the second/minute/hour deltas."""
    return {
        "now": lambda: KluctlTime(datetime.datetime.now()),
        # Naive, as Kluctl's datetime.utcnow(), so it compares with parse_iso of a time without offset.
        "utcnow": lambda: KluctlTime(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)),
        "parse_iso": lambda text: KluctlTime(datetime.datetime.fromisoformat(text)),
        "second": _SECOND,
        "minute": _SECOND * 60,
        "hour": _SECOND * 60 * 60,
    }


@functools.total_ordering
class KluctlTime:
    """A point in time as templates see it; prints in ISO 8601 (Python's isoformat)."""

    def __init__(self, moment):
        self.moment = moment

    def as_timezone(self, name):
        """The same instant in the IANA time zone `name` (e.g. "Europe/Berlin")."""
        return KluctlTime(self.moment.astimezone(zoneinfo.ZoneInfo(name)))

    def weekday(self):
        """0 is Monday, 6 is Sunday."""
        return self.moment.weekday()

    def hour(self):
        return self.moment.hour

    def minute(self):
        return self.moment.minute

    def second(self):
        return self.moment.second

    def nanosecond(self):
        return self.moment.microsecond * 1000

    # Kluctl's `t + delta` and `t - delta` shift t itself and return it; templates that reuse t see the change.
    def __add__(self, microseconds):
        self.moment += datetime.timedelta(microseconds=microseconds)
        return self

    def __sub__(self, microseconds):
        self.moment -= datetime.timedelta(microseconds=microseconds)
        return self

    def __lt__(self, other):
        return self.moment < _moment_of(other)

    def __eq__(self, other):
        return self.moment == _moment_of(other)

    def __str__(self):
        return self.moment.isoformat()


def _moment_of(other):
    if not isinstance(other, KluctlTime):
        # Kluctl's message, which names its class SimpleTime.
        raise ValueError("value is not a SimpleTime")
    return other.moment
