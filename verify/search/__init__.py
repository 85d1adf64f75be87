"""kverr.verify.search: the fix search, with the revision's own check as the judge.

core.py        Search: reach the check, then the smallest change that passes it
configfile.py  the search for argv-time checks: what a config file can get wrong
candidates.py  the before launch a record's conditions describe, and its candidate changes
changes.py     the order candidate changes are tried in, and a change in words
told.py        what a run's own output offers (quoted values, a notice's choice)
notice.py      what a notice's fix may be: a choice made explicit, never the feature given up
fields.py      what the solver is told about each option (choices, known values, sample)
typed.py       a candidate's values for a JSON option's fields, as its parser reads them
values.py      the values a free-text option is known to take (compared with, Literal, split)
reading.py     how a check's guards read: locals as what they hold, call sites, resets
where.py       which platform and model profile a check is tried on
"""
