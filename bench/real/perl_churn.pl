# SPDX-License-Identifier: MIT
# perl_churn.pl N — hash, array and string churn in Perl (Debian's perl uses
# the system malloc for everything): records created and dropped in random
# order, strings built piecewise, arrays sorted and spliced. Checks its own
# results and exits 1 on a mismatch. The random sequence is an LCG of our
# own so the work is the same everywhere.
use strict;
use warnings;
use integer;

my $n = shift // 200000;
my $keyspace = $n / 8 > 16 ? $n / 8 : 16;
my $state = 12345;
my %live;
my $running = 0;
my $made = 0;
my $temp = 0;

# Next 31 random bits (LCG mod 2^31, a multiplier that keeps it in range).
sub rnd {
  $state = ($state * 1103515245 + 12345) & 0x7fffffff;
  return $state;
}

for (1 .. $n) {
  my $r = rnd();
  my $op = $r % 10;
  my $key = rnd() % $keyspace;
  if ($op < 5) {
    my $nkids = $r % 8;
    my %rec = (
      name  => "e$key",
      value => $r & 0xffff,
      kids  => [ map { $key * 8 + $_ } 0 .. $nkids - 1 ],
      label => 'x' x (($r >> 8) % 60),
    );
    $running -= $live{$key}{value} if exists $live{$key};
    $live{$key} = \%rec;
    $running += $rec{value};
    $made++;
  } elsif ($op < 8) {
    if (exists $live{$key}) {
      $running -= $live{$key}{value};
      delete $live{$key};
    }
  } else {
    my $k = ($r >> 4) % 24;
    my @parts = map { $_ * 3 } 0 .. $k - 1;
    my $s = '';
    $s .= ($s eq '' ? '' : ',') . $_ for @parts;
    my @sorted = sort { $b <=> $a } @parts;
    my $want = 0;
    $want += length($_) for @parts;
    $want += $k - 1 if $k > 0;
    if (length($s) != $want || (@sorted && $sorted[0] != 3 * ($k - 1))) {
      print STDERR "perl_churn: bad temporary\n";
      exit 1;
    }
    $temp += length($s);
  }
}

my $total = 0;
for my $key (keys %live) {
  my $rec = $live{$key};
  my @want = map { $key * 8 + $_ } 0 .. @{ $rec->{kids} } - 1;
  if ($rec->{name} ne "e$key" || "@{$rec->{kids}}" ne "@want"
      || $rec->{label} ne 'x' x length($rec->{label})) {
    print STDERR "perl_churn: record $key corrupted\n";
    exit 1;
  }
  $total += $rec->{value};
}
if ($total != $running) {
  print STDERR "perl_churn: sum $total != running $running\n";
  exit 1;
}
printf "OK live=%d made=%d sum=%d temp=%d\n", scalar(keys %live), $made, $total, $temp;
