"""Training workloads: the cluster form and its job compiler, the model catalog, trace
import and generated batches."""
