"""Comparison methods (HE-VFL, split NN, FedAvg, Common, Local, Centralized).

They reuse securefl's data, models and runtime; filled in by the algorithm issues.
"""
