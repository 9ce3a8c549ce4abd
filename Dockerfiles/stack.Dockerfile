# One pinned stack: a Python venv at /opt/stack holding exactly Triton (+ torch) at its pins.
#
# reprokit itself is NOT installed here: the executor mounts the package and the kernels
# read-only at run time, so one image serves every reprokit revision and the harness never
# perturbs the stack under test. Built by reprokit.executors.docker with these build args
# (from stacks.toml; BASE_IMAGE and WITH_TORCH overridable, e.g. a local Debian base and
# compile-only where no image registry or torch index is reachable):
#
#   BASE_IMAGE      CUDA devel image, pinned by digest (any image with apt or python3 + venv)
#   TRITON_VERSION  e.g. 3.5.0
#   TORCH_VERSION   e.g. 2.9.0
#   TORCH_INDEX     torch's CUDA-specific index, e.g. https://download.pytorch.org/whl/cu130
#   WITH_TORCH      1 (default) or 0: compile-only image without torch
ARG BASE_IMAGE
FROM ${BASE_IMAGE}

# Declared again: an ARG before FROM is not visible after it (the label below records it).
ARG BASE_IMAGE
ARG TRITON_VERSION
ARG TORCH_VERSION=""
ARG TORCH_INDEX=""
ARG WITH_TORCH=1

# On every layer from here: what a killed build leaves (untagged, childless) reprokit can tell
# for its own and remove (DockerExecutor.sweep_images).
LABEL org.reprokit.layer="1"

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# CUDA images ship no Python; the offline Debian base already has it (and no apt lists).
RUN if python3 -c "import venv, ensurepip" 2>/dev/null; then \
        echo "python3 with venv present: $(python3 --version)"; \
    else \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi

RUN test -n "${TRITON_VERSION}" || { echo "build arg TRITON_VERSION is required" >&2; exit 1; } \
    && python3 -m venv /opt/stack \
    && /opt/stack/bin/python -m pip install "triton==${TRITON_VERSION}"

# torch comes from its CUDA-specific index (PyPI only for its dependencies); its own Triton
# requirement must agree with the pin, which the final check enforces. GPU images also get
# nvidia-ml-py, which the harness's NVML snapshot reads (pure Python, imported by nothing else).
RUN if [ "${WITH_TORCH}" = "1" ]; then \
        test -n "${TORCH_VERSION}" -a -n "${TORCH_INDEX}" \
            || { echo "WITH_TORCH=1 needs TORCH_VERSION and TORCH_INDEX" >&2; exit 1; }; \
        /opt/stack/bin/python -m pip install --index-url "${TORCH_INDEX}" \
            --extra-index-url https://pypi.org/simple "torch==${TORCH_VERSION}" "triton==${TRITON_VERSION}" \
            nvidia-ml-py; \
    else \
        echo "WITH_TORCH=${WITH_TORCH}: compile-only image, no torch"; \
    fi \
    && /opt/stack/bin/python -c "import sys, triton; v = triton.__version__; print('triton', v); sys.exit(v != '${TRITON_VERSION}')"

# Files the harness writes belong to the host user (the container runs as its uid:gid), who
# has no home in the image: HOME points at a folder anyone may write.
RUN mkdir -m 1777 -p /home/stack
ENV VIRTUAL_ENV=/opt/stack \
    PATH=/opt/stack/bin:${PATH} \
    HOME=/home/stack

LABEL org.reprokit.triton="${TRITON_VERSION}" \
      org.reprokit.torch="${TORCH_VERSION}" \
      org.reprokit.with-torch="${WITH_TORCH}" \
      org.reprokit.base-image="${BASE_IMAGE}"
