"""federated_vision: federated visual classification on real-world data with TFF."""
import setuptools

setuptools.setup(
    name="federated_vision",
    version="0.1.0",
    description=(
        "TensorFlow Federated reproductions of FedAvg/FedAvgM/FedIR/FedVC on "
        "real-world (non-IID, imbalanced) client data."),
    python_requires="==3.11.*",
    # Only the library is installed. `datasets/` and `experiments/` are run from
    # the repository (python -m experiments.X, python datasets/X.py); `datasets/`
    # has no __init__.py so it can never shadow Hugging Face's `datasets`.
    packages=setuptools.find_packages(include=["federated_vision", "federated_vision.*"]),
    # The exact versions live in requirements.lock (installed with --no-deps).
    install_requires=[
        "absl-py>=1.4,<2",
        "numpy~=1.25.0",
        "tensorflow~=2.14.0",
        "tensorflow-federated==0.87.0",
        "tensorflow-datasets>=4.9.3,<4.9.5",
        "s2sphere==0.2.5",
        "scikit-learn",
        "matplotlib",
        "tqdm",  # Progress bars of training_loop (locked in requirements.lock).
    ],
)
