# dpdk-shaper built from Debian 12's packages. What it needs to run
# (privileges, hugepages, interfaces): docs/docker.md.
#
#   docker build -t dpdk-shaper .
#   docker run --rm dpdk-shaper                      # its --help
FROM debian:12

WORKDIR /src
# the packages first: a change of the sources keeps this layer
COPY scripts/deps.sh scripts/deps.sh
RUN scripts/deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .
RUN scripts/build.sh app/dpdk-shaper tools/dpdk-shaper-ctl \
        tools/dpdk-shaper-replay

# shaper-api, shaper-exporter and the tools by name (docker exec, --entrypoint)
ENV PATH=/src/build/app:/src/build/tools:/src/scripts:$PATH
ENTRYPOINT ["/src/build/app/dpdk-shaper"]
CMD ["--help"]
