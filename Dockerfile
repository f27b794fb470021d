# The kit's grading image: Ubuntu 22.04 (the base of Gradescope's and otter grade's images), the kit in
# /opt/optlab with its pinned packages, and only what grading needs (.dockerignore leaves out .git and the
# examples). Its one RUN step is scripts/setup.sh, the script CI runs (it finds or installs a Python
# 3.11-3.13 with scripts/python.sh, then makes the virtual environment and lets the worker uids reach the
# interpreter). Run as root: grading makes the kit unreadable by the worker uids before any worker starts.
#
#   docker build -t optlab-grader .
#   # one submission, as Gradescope lays it out: results.json in ./results
#   docker run --rm -v "$PWD/submission:/autograder/submission:ro" -v "$PWD/results:/autograder/results" optlab-grader
#   # a folder of submissions (or an export zip): grades.csv and report.html in ./out
#   docker run --rm -v "$PWD/submissions:/submissions:ro" -v "$PWD/out:/out" optlab-grader \
#       grader batch /submissions -o /out/grades.csv
#   # a Dask worker for grader batch --cluster (the README's "Grading on a cluster"; the cluster extra)
#   docker run --rm --network host optlab-grader dask worker tcp://SCHEDULER:8786 --nthreads 4
FROM ubuntu:22.04

ARG EXTRAS=batch,cluster
WORKDIR /opt/optlab
COPY . .
RUN scripts/setup.sh
ENV PATH=/opt/optlab/.venv/bin:$PATH

CMD ["grader", "grade", "/autograder/submission", "-o", "/autograder/results/results.json"]
