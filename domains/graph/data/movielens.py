"""MovieLens 100K as a heterogeneous graph of users, movies, genres and occupations, whose users'
age brackets are classified from meta-paths (read from a local folder, nothing downloaded)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import torch
from torch_geometric.data import HeteroData

from framework.data import MOVIELENS_RATINGS, DataSet, Field, Format, Labels, Reference, Rows, dataset_dir
from framework.errors import ConfigError
from framework.values import PositiveInt

from .hetero import HeteroNodeClassificationData
from .karate import stratified_masks

SOURCE = "https://grouplens.org/datasets/movielens/100k/ (ml-100k.zip, unzipped into raw/)"
FILES = ("raw/u.data", "raw/u.user", "raw/u.item", "raw/u.occupation")

#: The meta-paths of :class:`MovieLensUsers` (its ``METAPATHS``).
UserMetaPath = Literal["UMU", "UOU", "UMGMU"]

#: The 19 genres of ``u.genre``, in the order of ``u.item``'s flags.
GENRES = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
#: The files read and their invariants: ``|``-separated latin-1 lines, the users' and films' ids
#: counting up from 1, each occupation named once, a user's occupation one of them, every film of
#: at least one genre (``unknown`` for those without), every rating of a known user and film.
MOVIELENS = DataSet(
    "MovieLens 100K",
    {
        "u.occupation": Format(
            "MovieLens occupations",
            (Field("occupation", text=True),),
            "|",
            "'occupation'",
            "latin-1",
            key=("occupation",),
        ),
        "u.user": Format(
            "MovieLens users",
            (
                Field("id", 1),
                Field("age", 1, 120),
                Field("gender", text=True, known=("M", "F")),
                Field("occupation", text=True),
                Field("zip code", text=True),
            ),
            "|",
            "'id|age|gender|occupation|zip code'",
            "latin-1",
            key=("id",),
            numbered=True,
        ),
        "u.item": Format(
            "MovieLens films",
            (
                Field("id", 1),
                Field("title", text=True),
                Field("release date", text=True, optional=True),
                Field("video release date", text=True, optional=True),
                Field("IMDb URL", text=True, optional=True),
                *(Field(genre, 0, 1) for genre in GENRES),
            ),
            "|",
            "'id|title|release date|video release date|IMDb URL' and 19 genre flags",
            "latin-1",
            key=("id",),
            numbered=True,
            labels=Labels(GENRES, least=1, most=None),
        ),
        "u.data": MOVIELENS_RATINGS,
    },
    references=(
        Reference("u.user", "occupation", "u.occupation", "occupation"),
        Reference("u.data", "user id", "u.user", "id"),
        Reference("u.data", "item id", "u.item", "id"),
    ),
)


def read_movielens(folder: Path) -> dict[str, Rows]:
    """The rows of ``u.occupation``, ``u.user``, ``u.item`` and ``u.data`` in ``folder/raw``,
    checked against :data:`MOVIELENS`."""
    rows = {name: spec.read(folder / "raw" / name) for name, spec in MOVIELENS.files.items()}
    MOVIELENS.check(rows)
    return rows


class MovieLensUsers(HeteroNodeClassificationData):
    """The users of MovieLens 100K (943), labelled by age bracket, in a graph with the movies they
    rated (1682), the movies' genres (19) and the users' occupations (21).

    Labels: the bracket of a user's age among ``age_brackets`` (default: under 25, 25-34,
    35-49, 50 and over: 234, 310, 274 and 125 users). Features of a user: gender (2) and
    occupation (21) one-hot, and the share of the user's ratings that went to each genre (19),
    42 in all; movies, genres and occupations have one constant feature. None of them and none
    of the meta-paths holds the age. Meta-paths: ``UMU`` (users who rated a common movie),
    ``UOU`` (the same occupation), ``UMGMU`` (users who rated movies of a common genre); every
    ``neighbours`` strongest ones are kept per user (most common movies or genre ratings; UOU
    ties broken at random). The split is per bracket: ``train_per_class`` training users, half
    of the rest (rounded down) validating, the others testing (240 / 351 / 352 users with the
    defaults). Sizes: ``num_classes`` (brackets) and, once set up, ``in_channels`` (42).

    Reads ``$FRAMEWORK_DATA_DIR/MovieLens100K/raw/{u.data,u.user,u.item,u.occupation}``
    (or ``<data.root>/raw``), the layout of ``torch_geometric.datasets.MovieLens100K``.

    Args:
        root: the MovieLens100K folder (holding ``raw/``), instead of ``$FRAMEWORK_DATA_DIR/MovieLens100K``.
        age_brackets: the ages at which a bracket starts, after the first one (increasing).
        train_per_class: labelled training users per bracket.
        metapaths: the meta-paths to build, distinct (default all three).
        **kwargs: options of :class:`HeteroNodeClassificationData` (``neighbours``, ``seed`` ...).
    """

    METAPATHS = {
        "UMU": [("user", "rates", "movie"), ("movie", "rated_by", "user")],
        "UOU": [("user", "works_as", "occupation"), ("occupation", "employs", "user")],
        "UMGMU": [
            ("user", "rates", "movie"),
            ("movie", "belongs_to", "genre"),
            ("genre", "includes", "movie"),
            ("movie", "rated_by", "user"),
        ],
    }
    target = "user"

    def __init__(
        self,
        root: Optional[str] = None,
        age_brackets: Sequence[PositiveInt] = (25, 35, 50),
        train_per_class: PositiveInt = 60,
        metapaths: Optional[Sequence[UserMetaPath]] = None,
        **kwargs,
    ) -> None:
        super().__init__(metapaths=metapaths, **kwargs)
        age_brackets = list(age_brackets)
        if not age_brackets or any(b >= a for b, a in zip(age_brackets, age_brackets[1:])):
            raise ConfigError(f"data.age_brackets must be increasing ages, got {age_brackets}")
        self.root, self.age_brackets, self.train_per_class = root, age_brackets, train_per_class
        self.num_classes = len(age_brackets) + 1

    def load_graph(self) -> HeteroData:
        folder = dataset_dir("MovieLens100K", root=self.root, source=SOURCE, expect=FILES)
        self.sources = dict.fromkeys(("train", "val", "test"), str(folder / "raw"))
        rows = read_movielens(folder)
        occupations, users = list(rows["u.occupation"]["occupation"]), rows["u.user"]
        ages = torch.from_numpy(users["age"])
        occupation = torch.tensor([occupations.index(job) for job in users["occupation"]])
        female = torch.from_numpy(users["gender"] == "F")
        genres = torch.from_numpy(np.stack([rows["u.item"][genre] for genre in GENRES], 1))  # (movies, 19)
        ratings = rows["u.data"]
        rates = torch.from_numpy(np.stack([ratings["user id"], ratings["item id"]]) - 1)  # ids start at 1
        num_users, num_movies = len(ages), len(genres)
        labels = torch.bucketize(ages, torch.tensor(self.age_brackets), right=True)

        per_user = torch.zeros(num_users, genres.shape[1]).index_add_(0, rates[0], genres[rates[1]].float())
        profile = per_user / per_user.sum(1, keepdim=True).clamp(min=1)
        features = torch.cat(
            [
                torch.nn.functional.one_hot(female.long(), 2),
                torch.nn.functional.one_hot(occupation, len(occupations)),
                profile,
            ],
            1,
        ).float()
        graph = HeteroData()
        graph["user"].x, graph["user"].y = features, labels
        graph["user"].train_mask, graph["user"].val_mask, graph["user"].test_mask = stratified_masks(
            labels, self.train_per_class, self.seed
        )
        for node_type, count in (("movie", num_movies), ("genre", genres.shape[1]), ("occupation", len(occupations))):
            graph[node_type].x = torch.ones(count, 1)
        works = torch.stack([torch.arange(num_users), occupation])
        belongs = genres.nonzero().T.contiguous()  # (movie, genre)
        for (source, relation, target), edges in (
            (("user", "rates", "movie"), rates),
            (("user", "works_as", "occupation"), works),
            (("movie", "belongs_to", "genre"), belongs),
        ):
            graph[source, relation, target].edge_index = edges
        graph["movie", "rated_by", "user"].edge_index = rates.flip(0)
        graph["occupation", "employs", "user"].edge_index = works.flip(0)
        graph["genre", "includes", "movie"].edge_index = belongs.flip(0)
        return graph
