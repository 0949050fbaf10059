# Multi-stage build of a static promhbase binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/promhbase ./cmd/promhbase

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/promhbase /promhbase
WORKDIR /data
EXPOSE 9201
ENTRYPOINT ["/promhbase"]
CMD ["serve", "--storage.embedded.path=/data"]
