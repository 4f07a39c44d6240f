"""The classifier: features, export-format model, inference without scikit-learn, training."""
