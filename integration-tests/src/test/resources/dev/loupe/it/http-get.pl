#!/usr/bin/perl
# An HTTP client for machines that have only perl-base (a minimal Debian): GET PATH from ADDRESS, a TCP HOST:PORT or
# a Unix socket's path, as the user that runs it, and write the body to OUT.
#   http-get.pl ADDRESS PATH OUT [TOKEN]      TOKEN: sent as "Authorization: Bearer TOKEN"
# Prints the status line ("HTTP/1.1 200 OK") and exits 0 when a response came; prints "connect: REASON" and exits 3
# when the connection was refused (e.g. "Permission denied" for a socket the user may not reach).
use strict;
use warnings;
use IO::Socket::INET;
use IO::Socket::UNIX;

my ($address, $path, $out, $token) = @ARGV;
die "usage: http-get.pl ADDRESS PATH OUT [TOKEN]\n" unless defined $out;
my $s = $address =~ m{^/}
    ? IO::Socket::UNIX->new(Peer => $address)
    : IO::Socket::INET->new(PeerAddr => $address, Proto => 'tcp');
unless ($s) {
    print "connect: $!\n";
    exit 3;
}
binmode $s;
my $request = "GET $path HTTP/1.0\r\nHost: localhost\r\n";
$request .= "Authorization: Bearer $token\r\n" if defined $token;
print $s "$request\r\n";
my $response = do { local $/; <$s> } // '';
close $s;
my ($head, $body) = split /\r\n\r\n/, $response, 2;
open my $f, '>:raw', $out or die "$out: $!\n";
print $f ($body // '');
close $f;
my ($status) = split /\r\n/, ($head // '');
print(($status // 'no response'), "\n");
exit 0;
