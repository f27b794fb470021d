# The kit's grading image: Debian 12 (bookworm; its python3.11 is the released 3.11.2: Ubuntu 22.04's is
# 3.11.0rc1, which scripts/python.sh refuses), the kit in /opt/optlab with its pinned packages, and only
# what grading needs (.dockerignore leaves out .git and the examples). Its one RUN step is scripts/setup.sh, the script CI runs (it finds or installs a Python
# 3.11-3.13 with scripts/python.sh, then makes the virtual environment and lets the worker uids reach the
# interpreter). Run as root: grading makes the kit unreadable by the worker uids before any worker starts.
#
#   docker build -t optlab-grader .
#   # BASE: another Debian 12 image, e.g. the one scripts/test-image.sh makes with debootstrap for Podman
#   podman build --pull=never --build-arg BASE=localhost/optlab-base:bookworm -t optlab-grader .
#   # one submission, as Gradescope lays it out: results.json in ./results
#   docker run --rm -v "$PWD/submission:/autograder/submission:ro" -v "$PWD/results:/autograder/results" optlab-grader
#   # a folder of submissions (or an export zip): grades.csv and report.html in ./out
#   docker run --rm -v "$PWD/submissions:/submissions:ro" -v "$PWD/out:/out" optlab-grader \
#       grader batch /submissions -o /out/grades.csv
#   # a Dask worker for grader batch --cluster (the README's "Grading on a cluster"; the cluster extra)
#   docker run --rm --network host optlab-grader dask worker tcp://SCHEDULER:8786 --nthreads 4
ARG BASE=debian:bookworm-slim
FROM ${BASE}

ARG EXTRAS=batch,cluster
WORKDIR /opt/optlab
COPY . .
RUN scripts/setup.sh
ENV PATH=/opt/optlab/.venv/bin:$PATH

CMD ["grader", "grade", "/autograder/submission", "-o", "/autograder/results/results.json"]
