"""Graph data modules: KarateClub (embedded default) and the Planetoid citation graphs; heterogeneous
graphs along meta-paths: generated authors (embedded) and the users of MovieLens 100K."""

from .base import NodeClassificationData
from .hetero import HeteroNodeClassificationData
from .karate import KarateClubData
from .movielens import MovieLensUsers
from .planetoid import PlanetoidData
from .planted import PlantedAuthors
from .sampling import TorchNeighborSampler, neighbor_sampler

__all__ = [
    "HeteroNodeClassificationData",
    "KarateClubData",
    "MovieLensUsers",
    "NodeClassificationData",
    "PlanetoidData",
    "PlantedAuthors",
    "TorchNeighborSampler",
    "neighbor_sampler",
]
