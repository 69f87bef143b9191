#include <mpi.h>
int main(int c,char**v){MPI_Init(&c,&v);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
int buf[256]={0},src[100]={0};MPI_Win w;MPI_Win_create(buf,sizeof buf,sizeof(int),MPI_INFO_NULL,MPI_COMM_WORLD,&w);
MPI_Win_fence(0,w); if(r==0){MPI_Put(src,100,MPI_INT,1,0,100,MPI_INT,w);MPI_Get(src,10,MPI_INT,2,0,10,MPI_INT,w);}
MPI_Win_fence(0,w);MPI_Win_free(&w);MPI_Finalize();}
