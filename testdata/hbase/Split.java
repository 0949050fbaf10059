// Split.java: admin commands that gohbase lacks, run by tools/scripts/hbase.sh
// with the JDK's single-file source launcher (JDK 11+) against the cached
// HBase jars and the test HBase's configuration directory:
//
//   java -cp "$RUN/conf:$LIB/*" testdata/hbase/Split.java split TABLE TIMEOUT_SECONDS [SPLITROW_HEX]
//   java -cp "$RUN/conf:$LIB/*" testdata/hbase/Split.java regions TABLE
//   java -cp "$RUN/conf:$LIB/*" testdata/hbase/Split.java servers
//   java -cp "$RUN/conf:$LIB/*" testdata/hbase/Split.java move TABLE TIMEOUT_SECONDS
//
// split asks the master to split every region of TABLE at the split point
// the region server picks (the middle key of the largest store file), or,
// with SPLITROW_HEX, the region that holds that row at that row. It then
// waits until TABLE has more online regions than before and none of them is
// in transition, and prints the new region count on stdout. regions prints
// the number of online regions of TABLE. servers prints the number of live
// region servers, one per line after it: host,port,startcode and the
// number of regions each holds. move moves TABLE's first region to another
// live region server (the one holding the fewest regions), waits until it
// serves there, and prints "FROM TO" (host,port,startcode each). Progress
// goes to stderr. Exit status: 0 done, 1 failed, 2 usage.

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.master.RegionState;
import org.apache.hadoop.hbase.util.Bytes;

// RegionInfo.isOffline and isSplitParent are deprecated in HBase 2 but are
// what hbase:meta records about a split parent.
@SuppressWarnings("deprecation")
public class Split {
  public static void main(String[] args) {
    if (args.length < 1 || (args.length < 2 && !args[0].equals("servers"))) {
      usage();
    }
    String mode = args[0];
    TableName table = args.length > 1 ? TableName.valueOf(args[1]) : null;
    try {
      switch (mode) {
        case "servers":
          if (args.length != 1) {
            usage();
          }
          try (Connection c = connect(); Admin admin = c.getAdmin()) {
            ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS));
            System.out.println(m.getLiveServerMetrics().size());
            for (var e : m.getLiveServerMetrics().entrySet()) {
              System.out.println(e.getKey() + " " + e.getValue().getRegionMetrics().size());
            }
          }
          break;
        case "move":
          if (args.length != 3) {
            usage();
          }
          System.out.println(move(table, Long.parseLong(args[2])));
          break;
        case "split":
          if (args.length < 3 || args.length > 4) {
            usage();
          }
          long timeoutSec = Long.parseLong(args[2]);
          byte[] row = args.length == 4 ? Bytes.fromHex(args[3]) : null;
          System.out.println(split(table, row, timeoutSec));
          break;
        case "regions":
          if (args.length != 2) {
            usage();
          }
          try (Connection c = connect(); Admin admin = c.getAdmin()) {
            mustExist(admin, table);
            System.out.println(onlineRegions(c, admin, table).size());
          }
          break;
        default:
          usage();
      }
    } catch (Exception e) {
      System.err.println("Split.java: " + mode + " " + table + ": " + e);
      System.exit(1);
    }
  }

  private static void usage() {
    System.err.println(
        "usage: Split.java split TABLE TIMEOUT_SECONDS [SPLITROW_HEX] | regions TABLE | servers | move TABLE TIMEOUT_SECONDS");
    System.exit(2);
  }

  private static Connection connect() throws Exception {
    Configuration conf = HBaseConfiguration.create();
    // Fail within seconds, not the client's default of minutes, when
    // HBase is not there.
    conf.setInt("hbase.client.retries.number", 10);
    return ConnectionFactory.createConnection(conf);
  }

  private static void mustExist(Admin admin, TableName table) throws Exception {
    if (!admin.tableExists(table)) {
      throw new IllegalArgumentException("table " + table + " does not exist");
    }
  }

  /** Splits and waits; returns the new number of online regions. */
  private static int split(TableName table, byte[] row, long timeoutSec) throws Exception {
    try (Connection c = connect(); Admin admin = c.getAdmin()) {
      mustExist(admin, table);
      int before = onlineRegions(c, admin, table).size();
      String at = row == null ? "the region server's split points" : "row " + Bytes.toHex(row);
      System.err.printf("Split.java: %s has %d online regions; splitting at %s%n", table, before, at);
      long start = System.nanoTime();
      long deadline = start + TimeUnit.SECONDS.toNanos(timeoutSec);
      // A daughter of an earlier split holds reference files into its
      // parent until a compaction rewrites them, and the master refuses to
      // split it until then ("NOT splittable"): try again until it can.
      if (row == null) {
        // The split points come from the store files: what the writers
        // sent may all be in the memstores still, and a region without
        // files has none ("bestSplitPoint = null").
        admin.flush(table);
      }
      for (boolean said = false; ; ) {
        try {
          if (row == null) {
            splitEach(c, admin, table);
          } else {
            admin.split(table, row);
          }
          break;
        } catch (Exception e) {
          if (!String.valueOf(e.getMessage()).contains("NOT splittable") || System.nanoTime() > deadline) {
            throw e;
          }
          if (!said) {
            System.err.printf("Split.java: the region is not splittable yet (references from an earlier split?); retrying%n");
            said = true;
          }
          Thread.sleep(500);
        }
      }
      while (true) {
        List<RegionInfo> online = onlineRegions(c, admin, table);
        int inTransition = inTransition(admin, table);
        if (online.size() > before && inTransition == 0) {
          System.err.printf(
              "Split.java: %s has %d online regions after %d ms%n",
              table, online.size(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
          return online.size();
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              String.format(
                  "%s still has %d online regions (%d before, %d in transition) after %d s",
                  table, online.size(), before, inTransition, timeoutSec));
        }
        Thread.sleep(200);
      }
    }
  }

  /**
   * Asks for a split of each online region of table at its own split
   * point, skipping the regions that have none (too little data); fails
   * when not one region could be split.
   */
  private static void splitEach(Connection c, Admin admin, TableName table) throws Exception {
    int asked = 0;
    String lastRefusal = "no online region";
    for (RegionInfo r : onlineRegions(c, admin, table)) {
      try {
        admin.splitRegionAsync(r.getRegionName()).get(60, TimeUnit.SECONDS);
        asked++;
      } catch (Exception e) {
        String msg = String.valueOf(e.getMessage());
        if (!msg.contains("bestSplitPoint = null") && !msg.contains("NOT splittable")) {
          throw e;
        }
        // Kept whole: split's retry looks for "NOT splittable" in it.
        lastRefusal = r.getEncodedName() + ": " + msg.lines().findFirst().orElse(msg);
      }
    }
    if (asked == 0) {
      throw new IllegalStateException("no region of " + table + " can be split at its split point; the last refusal: " + lastRefusal);
    }
    System.err.printf("Split.java: split %d region(s) of %s at their split points%n", asked, table);
  }

  /** Moves the table's first region to the live server with the fewest regions. */
  private static String move(TableName table, long timeoutSec) throws Exception {
    try (Connection c = connect(); Admin admin = c.getAdmin()) {
      mustExist(admin, table);
      HRegionLocation first;
      try (RegionLocator loc = c.getRegionLocator(table)) {
        first = loc.getAllRegionLocations().get(0);
      }
      ServerName from = first.getServerName();
      ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS));
      ServerName to = null;
      int fewest = Integer.MAX_VALUE;
      for (var e : m.getLiveServerMetrics().entrySet()) {
        int n = e.getValue().getRegionMetrics().size();
        if (!e.getKey().equals(from) && n < fewest) {
          to = e.getKey();
          fewest = n;
        }
      }
      if (to == null) {
        throw new IllegalStateException("no other live region server than " + from);
      }
      byte[] name = first.getRegion().getEncodedNameAsBytes();
      long start = System.nanoTime();
      long deadline = start + TimeUnit.SECONDS.toNanos(timeoutSec);
      System.err.printf("Split.java: moving %s from %s to %s%n", first.getRegion().getEncodedName(), from, to);
      admin.move(name, to);
      while (true) {
        HRegionLocation now;
        try (RegionLocator loc = c.getRegionLocator(table)) {
          now = loc.getRegionLocation(first.getRegion().getStartKey(), true);
        }
        if (to.equals(now.getServerName()) && inTransition(admin, table) == 0) {
          System.err.printf("Split.java: moved after %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
          return from + " " + to;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("region still on " + now.getServerName() + " after " + timeoutSec + " s");
        }
        Thread.sleep(200);
      }
    }
  }

  /**
   * The regions of the table that serve: not offline, not a split parent,
   * and with a region server in hbase:meta.
   */
  private static List<RegionInfo> onlineRegions(Connection c, Admin admin, TableName table)
      throws Exception {
    List<RegionInfo> out = new ArrayList<>();
    try (RegionLocator loc = c.getRegionLocator(table)) {
      for (HRegionLocation l : loc.getAllRegionLocations()) {
        RegionInfo r = l.getRegion();
        if (r == null || r.isOffline() || r.isSplitParent() || l.getServerName() == null) {
          continue;
        }
        out.add(r);
      }
    }
    return out;
  }

  /** The number of the table's regions that the master has in transition. */
  private static int inTransition(Admin admin, TableName table) throws Exception {
    ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.REGIONS_IN_TRANSITION));
    int n = 0;
    for (RegionState s : m.getRegionStatesInTransition()) {
      if (s.getRegion().getTable().equals(table)) {
        n++;
      }
    }
    return n;
  }
}
