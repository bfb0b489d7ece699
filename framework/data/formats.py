"""The formats that more than one domain reads, declared once (:mod:`.invariants`); a format that
one domain reads is declared beside its reader there.

* MovieLens' ``u.data`` (the recommender's histories, the graph domain's user-movie edges).
"""

from __future__ import annotations

from .invariants import Field, Format

#: MovieLens ``u.data``: ``user<TAB>item<TAB>rating<TAB>timestamp`` integers, ids from 1, ratings 1
#: to 5; a user rates a film once (the GroupLens files hold one row per user and film).
MOVIELENS_RATINGS = Format(
    "MovieLens ratings",
    (Field("user id", 1), Field("item id", 1), Field("rating", 1, 5), Field("timestamp", 0)),
    separator="\t",
    shape="'user<TAB>item<TAB>rating<TAB>timestamp'",
    key=("user id", "item id"),
)
