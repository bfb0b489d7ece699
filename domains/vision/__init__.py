"""Vision: attention in image classifiers and segmentation networks."""
