"""Calendar dates a query names, and the keyword matches written in them.

A fact's ``created_at`` says when it was written; a question that names a calendar date ("on 1 May, 2022",
"May 1, 2022", "2022-05-01"), a month ("what did Joanna do in May 2022?") or a year ("in 2021") asks
about what was said then.
:func:`date_windows` reads those periods from the query (only explicit dates with a year: "last week" or
"in May" need a reference point the query does not give), and :func:`dated_rescore` multiplies the keyword
score of a match written inside one of them, or up to ``DATE_SLACK_DAYS`` after it (a period is often
talked about in the days that follow: "last weekend I ran a charity race"), by ``1 + DATE_WEIGHT``.

Like coverage re-scoring, it only reorders facts that already match the query's words: a fact is never
returned for its date alone, and the words of a date it names do not count as query words a fact's text
should contain (:func:`without_dates`: coverage and the readable relevance leave them out). Measured on
LoCoMo with each fact written at its session's date (ADR 0011, "Quality, session 4").
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

DATE_WEIGHT = 1.0
DATE_SLACK_DAYS = 7.0

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_YEAR = r"((?:19|20)\d\d)"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b{_ORDINAL}\s+(?:of\s+)?({_MONTH})\.?,?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+{_ORDINAL},?\s+{_YEAR}\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b{_YEAR}\b")

Window = tuple[datetime, datetime]
"""A period ``[start, end)`` in UTC."""


def _day(year: int, month: int, day: int) -> Window | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # "31 February": not a date
        return None
    return start, start + timedelta(days=1)


def _month(year: int, month: int) -> Window:
    end = datetime(year + 1, 1, 1, tzinfo=UTC) if month == 12 else datetime(year, month + 1, 1, tzinfo=UTC)
    return datetime(year, month, 1, tzinfo=UTC), end


def date_windows(query: str) -> list[Window]:
    """The periods ``query`` names explicitly (days, then months, then years), at most 8; each span of
    the text is read once, so "1 May, 2022" is one day, not also a month and a year."""
    if _YEAR_ALONE.search(query) is None:  # every form needs a year: most queries stop here
        return []
    found: list[Window] = []
    rest = query
    for pattern, fields in ((_DAY_MONTH_YEAR, (3, 2, 1)), (_MONTH_DAY_YEAR, (3, 1, 2))):
        for match in pattern.finditer(rest):
            year, month, day = (match.group(i) for i in fields)
            window = _day(int(year), _MONTHS[month.lower()], int(day))
            if window is not None:
                found.append(window)
        rest = pattern.sub(" ", rest)
    for match in _ISO_DAY.finditer(rest):
        if (window := _day(*(int(part) for part in match.groups()))) is not None:
            found.append(window)
    rest = _ISO_DAY.sub(" ", rest)
    for match in _MONTH_YEAR.finditer(rest):
        found.append(_month(int(match.group(2)), _MONTHS[match.group(1).lower()]))
    rest = _MONTH_YEAR.sub(" ", rest)
    for match in _YEAR_ALONE.finditer(rest):
        year = int(match.group(1))
        found.append((datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)))
    return list(dict.fromkeys(found))[:8]


def without_dates(query: str) -> str:
    """``query`` with the calendar dates it names taken out (``query`` itself when it names none, or when
    nothing else is left): the words that coverage and the readable relevance count, since a date is
    matched through when a fact was written, not through the fact's words. BM25 still searches them."""
    if _YEAR_ALONE.search(query) is None:
        return query
    rest = query
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _ISO_DAY, _MONTH_YEAR, _YEAR_ALONE):
        rest = pattern.sub(" ", rest)
    return rest if rest.strip() else query


def written_in(moment: datetime, windows: list[Window], slack: timedelta) -> bool:
    """Whether ``moment`` falls in one of ``windows`` or up to ``slack`` after its end."""
    return any(start <= moment < end + slack for start, end in windows)


def dated_rescore(
    keyword_score: dict[str, float],
    info: Mapping[str, tuple[datetime, str]],
    windows: list[Window],
    weight: float = DATE_WEIGHT,
    slack_days: float = DATE_SLACK_DAYS,
) -> dict[str, float]:
    """``keyword_score`` with the score of each match written in one of ``windows`` (``info``: id ->
    ``(created_at, confidence)``) multiplied by ``1 + weight``; the same dict when nothing applies."""
    if not (windows and keyword_score) or weight <= 0:
        return keyword_score
    slack = timedelta(days=slack_days)
    factor = 1.0 + weight
    return {
        fid: score * factor if fid in info and written_in(info[fid][0], windows, slack) else score
        for fid, score in keyword_score.items()
    }
