"""MovieLens 100K as a heterogeneous graph of users, movies, genres and occupations, whose users'
age brackets are classified from meta-paths (read from a local folder, nothing downloaded)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Optional

import torch
from torch_geometric.data import HeteroData

from framework.data import TextFile, dataset_dir
from framework.errors import ConfigError
from framework.values import PositiveInt

from .hetero import HeteroNodeClassificationData
from .karate import stratified_masks

SOURCE = "https://grouplens.org/datasets/movielens/100k/ (ml-100k.zip, unzipped into raw/)"
FILES = ("raw/u.data", "raw/u.user", "raw/u.item", "raw/u.occupation")

#: The meta-paths of :class:`MovieLensUsers` (its ``METAPATHS``).
UserMetaPath = Literal["UMU", "UOU", "UMGMU"]


def numbered_rows(text: TextFile, columns: int, shape: str) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of the non-blank lines of a ``|``-separated MovieLens file, each
    of exactly ``columns`` fields, the first an id counting up from 1."""
    rows = list(text.fields("|", columns, shape))
    for due, (number, fields) in enumerate(rows, 1):
        if text.integer(number, fields[0], "id", 1) != due:
            raise text.error(number, f"id {fields[0]} where {due} is due: the ids count up from 1")
    return rows


def read_users(folder: Path) -> tuple[list[str], torch.Tensor, torch.Tensor, torch.Tensor]:
    """The occupations (``u.occupation``), and of every user of ``u.user`` the age, the
    occupation's index and whether female: (users,) each."""
    occupations = [
        line.strip()
        for _, line in TextFile(folder / "raw/u.occupation", "MovieLens occupations", encoding="latin-1").numbered()
    ]
    text = TextFile(folder / "raw/u.user", "MovieLens users", encoding="latin-1")
    ages, occupation, female = [], [], []
    for number, (_, age, gender, job, _) in numbered_rows(text, 5, "'id|age|gender|occupation|zip code'"):
        ages.append(text.integer(number, age, "age", 1, 120))
        female.append(text.known(number, gender, ("M", "F"), "gender") == "F")
        occupation.append(occupations.index(text.known(number, job, occupations, "occupation", " in u.occupation")))
    return occupations, torch.tensor(ages), torch.tensor(occupation), torch.tensor(female)


def read_genres(folder: Path) -> torch.Tensor:
    """The 19 genre flags (0 or 1) of every film of ``u.item``: (films, 19) long."""
    text = TextFile(folder / "raw/u.item", "MovieLens films", encoding="latin-1")
    shape = "'id|title|release date|video release date|IMDb URL' and 19 genre flags"
    return torch.tensor(
        [
            [text.integer(number, flag, "genre flag", 0, 1) for flag in fields[5:]]
            for number, fields in numbered_rows(text, 24, shape)
        ]
    )


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
        occupations, ages, occupation, female = read_users(folder)
        genres = read_genres(folder)  # (movies, 19)
        ratings = TextFile(folder / "raw/u.data", "MovieLens ratings").integers(
            "\t",
            {"user id": (1, len(ages)), "item id": (1, len(genres)), "rating": (1, 5), "timestamp": (0, None)},
            "'user<TAB>item<TAB>rating<TAB>timestamp'",
        )
        rates = torch.from_numpy(ratings[:, :2].T - 1).contiguous()  # ids start at 1
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
