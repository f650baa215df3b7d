package io.dilu.loadgen;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A function's request rate, one value per second from second 0: what the load generator replays against
 * servers, and the co-scaling simulator's input (the simulator depends on this module for it). Read from CSV
 * ({@code second,rps}, one row per second in order), or made from a per-request trace such as the Azure LLM
 * inference trace 2023 ({@code TIMESTAMP,ContextTokens,GeneratedTokens}), counting requests per second from the
 * first.
 *
 * @param name what the figures call it
 * @param rps requests per second, each finite and ≥ 0
 */
public record RateTrace(String name, double[] rps) {

    /** Most seconds a trace may have: a week. */
    public static final int MAX_SECONDS = 7 * 24 * 3600;
    /** Highest rate a second may have. */
    public static final double MAX_RPS = 1e6;

    public RateTrace {
        rps = rps.clone();
        if (rps.length == 0 || rps.length > MAX_SECONDS) {
            throw new IllegalArgumentException("a trace needs 1.." + MAX_SECONDS + " seconds, got " + rps.length);
        }
        for (int i = 0; i < rps.length; i++) {
            if (!(rps[i] >= 0 && rps[i] <= MAX_RPS)) {
                throw new IllegalArgumentException("rps of second " + i + " must be in 0.." + MAX_RPS + ", got " + rps[i]);
            }
        }
    }

    /** A malformed input, with the line at fault. */
    public static final class InvalidTraceException extends IOException {
        InvalidTraceException(String source, int line, String message) {
            super(source + ":" + line + ": " + message);
        }
    }

    public int seconds() {
        return rps.length;
    }

    @Override
    public double[] rps() {
        return rps.clone();
    }

    public double rate(int second) {
        return rps[second];
    }

    public double total() {
        return Arrays.stream(rps).sum();
    }

    /** Reads {@code second,rps} rows: a header, then seconds 0, 1, 2, ... each once, in order. */
    public static RateTrace readCsv(Reader reader, String source) throws IOException {
        BufferedReader in = new BufferedReader(reader);
        String header = in.readLine();
        if (header == null || !header.strip().equals("second,rps")) {
            throw new InvalidTraceException(source, 1, "the header must be second,rps, got " + header);
        }
        List<Double> rates = new ArrayList<>();
        int line = 1;
        for (String row = in.readLine(); row != null; row = in.readLine()) {
            line++;
            if (row.isBlank()) {
                continue;
            }
            String[] cells = row.split(",", -1);
            if (cells.length != 2) {
                throw new InvalidTraceException(source, line, "expected second,rps, got " + cells.length + " columns");
            }
            long second;
            double rps;
            try {
                second = Long.parseLong(cells[0].strip());
                rps = Double.parseDouble(cells[1].strip());
            } catch (NumberFormatException e) {
                throw new InvalidTraceException(source, line, "second must be an integer and rps a number, got " + row);
            }
            if (second != rates.size()) {
                throw new InvalidTraceException(source, line, "second must be " + rates.size() + " (one row per second, in order), got " + second);
            }
            if (!(rps >= 0 && rps <= MAX_RPS)) {
                throw new InvalidTraceException(source, line, "rps must be in 0.." + MAX_RPS + ", got " + cells[1].strip());
            }
            if (rates.size() == MAX_SECONDS) {
                throw new InvalidTraceException(source, line, "more than " + MAX_SECONDS + " seconds");
            }
            rates.add(rps);
        }
        if (rates.isEmpty()) {
            throw new InvalidTraceException(source, line, "no rows after the header");
        }
        return new RateTrace(source, rates.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static final DateTimeFormatter AZURE_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss[.SSSSSSS]");

    /**
     * Counts the requests of a per-request trace per second, from the second of its first request; the first
     * column holds the request's time ({@code yyyy-MM-dd HH:mm:ss.fffffff}, the Azure LLM trace's format),
     * in order.
     */
    public static RateTrace fromRequests(Reader reader, String source) throws IOException {
        BufferedReader in = new BufferedReader(reader);
        String header = in.readLine();
        if (header == null || !header.startsWith("TIMESTAMP")) {
            throw new InvalidTraceException(source, 1, "the header must start with TIMESTAMP, got " + header);
        }
        List<Double> counts = new ArrayList<>();
        LocalDateTime first = null;
        LocalDateTime previous = null;
        int line = 1;
        for (String row = in.readLine(); row != null; row = in.readLine()) {
            line++;
            if (row.isBlank()) {
                continue;
            }
            LocalDateTime at;
            try {
                at = LocalDateTime.parse(row.split(",", 2)[0].strip(), AZURE_TIME);
            } catch (DateTimeParseException e) {
                throw new InvalidTraceException(source, line, "TIMESTAMP must be yyyy-MM-dd HH:mm:ss.fffffff, got "
                        + row.split(",", 2)[0]);
            }
            if (previous != null && at.isBefore(previous)) {
                throw new InvalidTraceException(source, line, "requests must be in time order; " + at + " is before " + previous);
            }
            if (first == null) {
                first = at.truncatedTo(ChronoUnit.SECONDS);
            }
            long second = ChronoUnit.SECONDS.between(first, at);
            if (second >= MAX_SECONDS) {
                throw new InvalidTraceException(source, line, "more than " + MAX_SECONDS + " seconds after the first request");
            }
            while (counts.size() <= second) {
                counts.add(0.0);
            }
            counts.set((int) second, counts.get((int) second) + 1);
            previous = at;
        }
        if (counts.isEmpty()) {
            throw new InvalidTraceException(source, line, "no requests after the header");
        }
        return new RateTrace(source, counts.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** The trace as {@code second,rps} CSV. */
    public String toCsv() {
        StringBuilder out = new StringBuilder("second,rps\n");
        for (int i = 0; i < rps.length; i++) {
            out.append(i).append(',').append(rps[i] == Math.rint(rps[i]) ? Long.toString((long) rps[i]) : Double.toString(rps[i]))
                    .append('\n');
        }
        return out.toString();
    }
}
